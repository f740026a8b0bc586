import crypto from "node:crypto";
import { Counter, Gauge, Registry } from "prom-client";
import { sessionUser } from "./auth/users";
import type { Db } from "./db/client";
import { verdictSchema } from "./engine/verdicts";
import { env } from "./env";
import { LIVE_CONTROLLER_WINDOW_SECONDS } from "./health";
import { countStuck } from "./runs/stuck";

/**
 * GET /api/metrics. The figures span every company, so they are for a scraper holding
 * RUNWARDEN_METRICS_TOKEN or a signed-in person who sees every company — nobody else.
 */
export async function metricsResponse(db: Db, request: Request, token = env.RUNWARDEN_METRICS_TOKEN): Promise<Response> {
  const bearer = /^Bearer (.+)$/i.exec(request.headers.get("authorization") ?? "")?.[1];
  const tokenOk = !!token && !!bearer && bearer.length === token.length && crypto.timingSafeEqual(Buffer.from(bearer), Buffer.from(token));
  if (!tokenOk) {
    const user = await sessionUser(db, request.headers);
    if (!user) return new Response("# sign in, or send Authorization: Bearer RUNWARDEN_METRICS_TOKEN\n", { status: 401 });
    if (!user.scope.all) return new Response("# metrics span every company; your account sees only some\n", { status: 403 });
  }
  try {
    const { body, contentType } = await renderMetrics(db);
    return new Response(body, { headers: { "content-type": contentType, "cache-control": "no-store" } });
  } catch (err) {
    return new Response(`# metrics unavailable: ${err instanceof Error ? err.message : String(err)}\n`, { status: 503 });
  }
}

/** The sweeps' kinds (`sweepSummarySchema` in server/controller/sweeps/pass.ts; a test holds the two equal). */
export const SWEEP_PASS_KINDS = ["creation_intents", "teardown"] as const;

/** Every (kind, verdict) a proof can record: the engine's verdicts, one series each from the first scrape. */
const PROOF_SERIES = verdictSchema.options.flatMap((o) => o.shape.verdict.options.map((verdict) => ({ kind: o.shape.kind.value as string, verdict: verdict as string })));

/**
 * Prometheus metrics. Controllers are separate processes (several per database), so the
 * figures are read from what they record — runs, proofs, sweep passes, intents — rather
 * than from counters in this process: any dashboard replica reports the same numbers.
 *
 * A figure that only grows is a **counter** (`_total`): its value is a total the database
 * keeps — rows of `proofs`, `sweep_passes`, checked `forecast_runs`, which nothing deletes, and
 * sums of columns a pass writes once — so a restarted dashboard (or another replica) reports
 * the same figure, never a drop that `rate()` and `increase()` would read as a reset. Each
 * counter's known series is there at 0 before its first event, or `increase()` would miss
 * that event. Everything else is a level: a **gauge**, never named `_total`
 * (`promtool check metrics` holds both: server/metrics.int.test.ts).
 */
export async function renderMetrics(db: Db): Promise<{ body: string; contentType: string }> {
  const registry = new Registry();
  const gauge = (name: string, help: string, labelNames: string[] = []) => new Gauge({ name, help, labelNames, registers: [registry] });
  /**
   * A counter set to the database's totals: each of `known` at 0, then each label set's total
   * added once (the reads group by the labels, so a set comes at most once).
   */
  const counter = <L extends string>(name: `${string}_total`, help: string, labelNames: L[], known: Array<Record<L, string>>) => {
    const c = new Counter<L>({ name, help, labelNames, registers: [registry] });
    for (const labels of known) c.inc(labels, 0);
    return (labels: Record<L, string>, total: number) => c.inc(labels, total);
  };

  const runs = gauge("runwarden_runs", "Runs by status and outcome", ["status", "outcome"]);
  for (const r of await db.run.groupBy({ by: ["status", "outcome"], _count: { _all: true } })) {
    runs.set({ status: r.status, outcome: r.outcome ?? "none" }, r._count._all);
  }
  const codes = gauge("runwarden_run_failures", "Runs by failure code", ["code"]);
  for (const r of await db.run.groupBy({ by: ["failureCode"], where: { failureCode: { not: null } }, _count: { _all: true } })) {
    codes.set({ code: r.failureCode ?? "" }, r._count._all);
  }
  const kinds = SWEEP_PASS_KINDS.map((kind) => ({ kind }));
  const passes = counter("runwarden_sweep_passes_total", "Sweep passes recorded", ["kind"], kinds);
  const judged = counter("runwarden_sweep_rows_judged_total", "Rows judged by sweeps", ["kind"], kinds);
  const reclaims = counter("runwarden_sweep_reclaims_total", "Sandboxes reclaimed from creation intents", ["kind"], kinds);
  for (const r of await db.sweepPass.groupBy({ by: ["kind"], _count: { _all: true }, _sum: { judged: true, reclaimed: true } })) {
    passes({ kind: r.kind }, r._count._all);
    judged({ kind: r.kind }, r._sum.judged ?? 0);
    reclaims({ kind: r.kind }, r._sum.reclaimed ?? 0);
  }
  const verdicts = counter("runwarden_proofs_total", "Engine decisions recorded, by kind and verdict", ["kind", "verdict"], PROOF_SERIES);
  for (const r of await db.proof.groupBy({ by: ["kind", "verdict"], _count: { _all: true } })) {
    verdicts({ kind: r.kind, verdict: r.verdict }, r._count._all);
  }
  const intents = gauge("runwarden_creation_intents", "Sandbox creation intents by status", ["status"]);
  for (const r of await db.sandboxCreationIntent.groupBy({ by: ["status"], _count: { _all: true } })) {
    intents.set({ status: r.status }, r._count._all);
  }
  const leases = gauge("runwarden_leases", "Environment leases by status", ["status"]);
  for (const r of await db.environmentLease.groupBy({ by: ["status"], _count: { _all: true } })) {
    leases.set({ status: r.status }, r._count._all);
  }
  const latency = await db.$queryRaw<Array<{ n: bigint; avg: number | null; p50: number | null; p95: number | null; max: number | null }>>`
    SELECT count(*) AS n,
           avg(extract(epoch FROM (resolved_at - created_at))) AS avg,
           percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM (resolved_at - created_at))) AS p50,
           percentile_cont(0.95) WITHIN GROUP (ORDER BY extract(epoch FROM (resolved_at - created_at))) AS p95,
           max(extract(epoch FROM (resolved_at - created_at))) AS max
    FROM sandbox_creation_intents WHERE status = 'reclaimed' AND resolved_at IS NOT NULL`;
  const reclaimLatency = gauge("runwarden_reclaim_latency_seconds", "Seconds from an intent's creation to its sandbox's reclaim", ["stat"]);
  const l = latency[0];
  if (l && Number(l.n) > 0) {
    for (const stat of ["avg", "p50", "p95", "max"] as const) reclaimLatency.set({ stat }, Number(l[stat] ?? 0));
  }
  const controllers = gauge("runwarden_controllers_live", `Controllers that heartbeated in the last ${LIVE_CONTROLLER_WINDOW_SECONDS} s`);
  const breakers = gauge("runwarden_provider_breaker_open", "Live controllers whose provider breaker is open (the provider unavailable to them, §2.8)");
  const outageFor = gauge("runwarden_provider_unavailable_seconds", "Seconds since the earliest open breaker of a live controller opened (0: none open)");
  const waiting = gauge("runwarden_runs_waiting_on_provider", "Executing runs that wait for their provider to come back");
  // On the database's clock, as the heartbeats are written.
  const [live] = await db.$queryRaw<Array<{ n: bigint; open: bigint; down_s: number | null }>>`
    SELECT count(*) AS n, count(provider_unavailable_since) AS open,
      extract(epoch FROM now() - min(provider_unavailable_since))::float8 AS down_s
    FROM controller_processes WHERE stopped_at IS NULL AND last_seen_at > now() - make_interval(secs => ${LIVE_CONTROLLER_WINDOW_SECONDS})`;
  controllers.set(Number(live?.n ?? 0));
  breakers.set(Number(live?.open ?? 0));
  outageFor.set(Math.max(0, live?.down_s ?? 0));
  waiting.set(await db.run.count({ where: { providerWaitSince: { not: null }, status: { in: ["starting", "running", "suspended"] } } }));
  // The builds live side by side (docs/operations.md, "Upgrades and migrations"): more than two is a deploy gone wrong.
  const versions = gauge("runwarden_controller_versions", "Live controllers by the build they run and the runner program they ship", ["version", "runner_digest"]);
  for (const v of await db.$queryRaw<Array<{ version: string | null; runner_digest: string | null; n: bigint }>>`
    SELECT version, runner_digest, count(*) AS n FROM controller_processes
    WHERE stopped_at IS NULL AND last_seen_at > now() - make_interval(secs => ${LIVE_CONTROLLER_WINDOW_SECONDS})
    GROUP BY version, runner_digest`) {
    versions.set({ version: v.version ?? "unknown", runner_digest: v.runner_digest ?? "unknown" }, Number(v.n));
  }
  // One statement over live runs (docs/rules.md §4, "Stuck runs"); a run stuck for several reasons counts under each.
  const stuck = gauge("runwarden_runs_stuck", "Live runs that are not moving, by reason (any: stuck for at least one)", ["reason"]);
  for (const [reason, n] of Object.entries(await countStuck(db, { all: true }))) stuck.set({ reason }, n);
  // Alerts: one index scan (status, next_attempt_at). A growing `pending` is a receiver that is down; `failed` was given up.
  const alerts = gauge("runwarden_alert_deliveries", "Alert deliveries by status (pending, delivered, failed)", ["status"]);
  for (const status of ["pending", "delivered", "failed"]) alerts.set({ status }, 0);
  for (const r of await db.alertDelivery.groupBy({ by: ["status"], _count: { _all: true } })) alerts.set({ status: r.status }, r._count._all);
  // Stored forecasts checked after a restart (§2.12): `differed` is a defect of the forecast or of recovery.
  const forecasts = gauge("runwarden_forecast_runs_checked", "Stored forecast runs checked after a restart, by outcome (held, differed, not_restarted)", ["outcome"]);
  // An outcome is written once (forecasts/check.ts: `outcome IS NULL`), so `differed` only grows.
  const missed = counter("runwarden_forecast_missed_total", "Stored forecast runs whose restart did not do what was forecast", [], [{}]);
  for (const outcome of ["held", "differed", "not_restarted"]) forecasts.set({ outcome }, 0);
  let differed = 0;
  for (const r of await db.forecastRun.groupBy({ by: ["outcome"], where: { outcome: { not: null } }, _count: { _all: true } })) {
    forecasts.set({ outcome: r.outcome ?? "" }, r._count._all);
    if (r.outcome === "differed") differed = r._count._all;
  }
  missed({}, differed);
  return { body: await registry.metrics(), contentType: registry.contentType };
}
