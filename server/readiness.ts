import { z } from "zod";
import type { Db } from "./db/client";
import { instanceIdOf } from "./db/installation";
import { emulatorUrl } from "./emulator/config";
import type { Env } from "./env";
import { liveControllerCount } from "./health";

/**
 * GET /api/health: whether this installation can do its work now, for a process manager, a
 * container's HEALTHCHECK or a load balancer (docs/operations.md, "Health"). It is answered to
 * anyone, without signing in, so it says only which part is up or down: never an error's text,
 * a URL, a host or a count.
 */

/**
 * How long the whole answer may take. A caller that times out learns nothing about which
 * part hangs, and Docker's HEALTHCHECK gives a check 30 s by default (the docs' recipe: 5 s).
 */
export const READINESS_TIMEOUT_MS = 2_000;

export const READINESS_PARTS = ["database", "controller", "emulator"] as const;
export type ReadinessPart = (typeof READINESS_PARTS)[number];

const upOrDown = z.enum(["up", "down"]);
export const readinessSchema = z.object({
  status: z.enum(["ok", "down"]),
  /** The parts that are down, in `READINESS_PARTS` order; empty with `ok`. */
  down: z.array(z.enum(READINESS_PARTS)),
  parts: z.object({
    database: upOrDown,
    /** Up while at least one controller of this instance heartbeats (server/health.ts). */
    controller: upOrDown,
    /** `not_used` with real Daytona (DAYTONA_API_URL set). */
    emulator: z.enum(["up", "down", "not_used"]),
  }),
});
export type Readiness = z.infer<typeof readinessSchema>;

export interface ReadinessSources {
  db: Db;
  /** This installation's instance id; asked only once the database answered. */
  instanceId: () => Promise<string>;
  /** The emulator's base URL, or null when the provider is Daytona. */
  emulatorUrl: string | null;
  timeoutMs?: number;
}

/** What the dashboard process checks: its own database client, instance id and provider. */
export function readinessSources(db: Db, env: Pick<Env, "RUNWARDEN_INSTANCE_ID" | "DAYTONA_API_URL" | "EMULATOR_URL" | "EMULATOR_PORT">): ReadinessSources {
  return {
    db,
    instanceId: () => instanceIdOf(db, env.RUNWARDEN_INSTANCE_ID),
    emulatorUrl: env.DAYTONA_API_URL ? null : emulatorUrl(env),
  };
}

export async function readReadiness(sources: ReadinessSources): Promise<Readiness> {
  // One deadline for the whole answer: the controller's read gets what the database's left.
  const deadline = Date.now() + (sources.timeoutMs ?? READINESS_TIMEOUT_MS);
  const [stored, emulator] = await Promise.all([
    (async () => {
      if (!(await before(deadline, () => sources.db.$queryRaw`SELECT 1`)).ok) {
        // A controller is judged by its heartbeats in the database: with the database down none can be shown live.
        return { database: "down", controller: "down" } as const;
      }
      const live = await before(deadline, async () => liveControllerCount(sources.db, await sources.instanceId()));
      return { database: "up", controller: live.ok && live.value > 0 ? "up" : "down" } as const;
    })(),
    sources.emulatorUrl === null ? ("not_used" as const) : emulatorAnswers(sources.emulatorUrl, deadline),
  ]);
  const parts = { ...stored, emulator };
  const down = READINESS_PARTS.filter((part) => parts[part] === "down");
  return readinessSchema.parse({ status: down.length ? "down" : "ok", down, parts });
}

/** The answer as HTTP: 200 when every part is up, else 503; never cached by anyone. */
export async function healthResponse(sources: ReadinessSources): Promise<Response> {
  const readiness = await readReadiness(sources);
  return Response.json(readiness, { status: readiness.status === "ok" ? 200 : 503, headers: { "cache-control": "no-store" } });
}

/** The emulator's own `/health` (server/emulator/server.ts) answered 2xx before the deadline. */
async function emulatorAnswers(base: string, deadline: number): Promise<"up" | "down"> {
  try {
    const res = await fetch(`${base}/health`, { signal: AbortSignal.timeout(Math.max(1, deadline - Date.now())), cache: "no-store" });
    await res.arrayBuffer();
    return res.ok ? "up" : "down";
  } catch {
    return "down";
  }
}

/**
 * `work`'s value if it settles before the deadline. A query cannot be cancelled from here: one
 * that hangs (a server that accepts and never answers) is left to settle on its own.
 */
async function before<T>(deadline: number, work: () => Promise<T>): Promise<{ ok: true; value: T } | { ok: false }> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<{ ok: false }>((resolve) => {
    timer = setTimeout(() => resolve({ ok: false }), Math.max(0, deadline - Date.now()));
  });
  try {
    return await Promise.race([
      work().then(
        (value) => ({ ok: true as const, value }),
        () => ({ ok: false as const }),
      ),
      late,
    ]);
  } finally {
    clearTimeout(timer);
  }
}
