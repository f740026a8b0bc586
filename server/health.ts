import { z } from "zod";
import { Prisma, type Db } from "./db/client";
import { companyWhere, type CompanyScope } from "./shared/roles";

/**
 * Whether the product's moving parts are there (docs/rules.md §2.8): controllers that heartbeat,
 * and the provider as their breakers see it. What the overview, the run page and /api/metrics
 * read; each controller records its breaker's state on its own row.
 */

/** A controller that has not heartbeated for this long (five heartbeats) is not counted as running. */
export const LIVE_CONTROLLER_WINDOW_SECONDS = 10;

/**
 * A live controller of this instance: not stopped, heartbeated within the window, on the
 * database's clock (the heartbeats are written on it). One rule for the overview and for
 * GET /api/health (server/readiness.ts).
 */
function liveControllerWhere(instanceId: string): Prisma.Sql {
  return Prisma.sql`instance_id = ${instanceId} AND stopped_at IS NULL AND last_seen_at > now() - make_interval(secs => ${LIVE_CONTROLLER_WINDOW_SECONDS})`;
}

/** How many controllers of this instance are live now. */
export async function liveControllerCount(db: Db, instanceId: string): Promise<number> {
  const [row] = await db.$queryRaw<Array<{ n: bigint }>>`SELECT count(*) AS n FROM controller_processes WHERE ${liveControllerWhere(instanceId)}`;
  return Number(row?.n ?? 0);
}

export const healthOutput = z.object({
  controllers: z.object({
    live: z.number().int(),
    /** With none live: when the last one was last seen (null: none ever ran). */
    noneSince: z.date().nullable(),
    /**
     * The builds the live controllers run, each with its runner program and how many run it
     * (docs/operations.md, "Upgrades and migrations"): two during a rolling deploy, more is a
     * deploy gone wrong (the overview warns). `unknown` for a controller that recorded none.
     */
    versions: z.array(z.object({ version: z.string(), runnerDigest: z.string().nullable(), runnerProtocol: z.number().int().nullable(), controllers: z.number().int() })),
  }),
  /** Null while every live controller reaches its provider. */
  providerOutage: z
    .object({
      since: z.date(),
      lastError: z.string().nullable(),
      nextProbeAt: z.date().nullable(),
      /** Live controllers whose breaker is open. */
      controllers: z.number().int(),
    })
    .nullable(),
  /** Runs (in scope) that wait for the provider to come back. */
  runsWaiting: z.number().int(),
});
export type Health = z.infer<typeof healthOutput>;

export async function readHealth(db: Db, scope: CompanyScope, instanceId: string): Promise<Health> {
  const [live, lastSeen, waiting] = await Promise.all([
    db.$queryRaw<Array<{ since: Date | null; last_error: string | null; next_probe_at: Date | null; version: string | null; runner_digest: string | null; runner_protocol: number | null }>>`
      SELECT provider_unavailable_since AS since, provider_last_error AS last_error, provider_next_probe_at AS next_probe_at,
        version, runner_digest, runner_protocol
      FROM controller_processes
      WHERE ${liveControllerWhere(instanceId)}`,
    db.controllerProcess.aggregate({ where: { instanceId }, _max: { lastSeenAt: true } }),
    db.run.count({ where: { AND: [companyWhere(scope), { instanceId, providerWaitSince: { not: null }, status: { in: ["starting", "running", "suspended"] } }] } }),
  ]);
  const out = live.filter((c) => c.since !== null);
  const earliest = out.reduce<(typeof out)[number] | null>((a, c) => (a === null || c.since! < a.since! ? c : a), null);
  return {
    controllers: { live: live.length, noneSince: live.length === 0 ? lastSeen._max.lastSeenAt : null, versions: versionsOf(live) },
    providerOutage: earliest ? { since: earliest.since!, lastError: earliest.last_error, nextProbeAt: earliest.next_probe_at, controllers: out.length } : null,
    runsWaiting: waiting,
  };
}

/** Live controllers grouped by the build they run, the most common first. */
function versionsOf(live: ReadonlyArray<{ version: string | null; runner_digest: string | null; runner_protocol: number | null }>): Health["controllers"]["versions"] {
  const by = new Map<string, Health["controllers"]["versions"][number]>();
  for (const c of live) {
    const key = `${c.version ?? "unknown"}\u0000${c.runner_digest ?? ""}`;
    const seen = by.get(key);
    if (seen) seen.controllers += 1;
    else by.set(key, { version: c.version ?? "unknown", runnerDigest: c.runner_digest, runnerProtocol: c.runner_protocol, controllers: 1 });
  }
  return [...by.values()].sort((a, b) => b.controllers - a.controllers || a.version.localeCompare(b.version));
}
