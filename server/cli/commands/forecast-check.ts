import { withCliDatabase } from "../database";
import { CliFailure, type CliIO } from "../io";

/** `runwarden forecast --check` exits with this when any stored forecast run differed from its restart. */
export const EXIT_FORECAST_MISSED = 4;

export interface ForecastCheckOptions {
  json?: boolean;
  /** Only this forecast's runs. */
  forecast?: string;
  /** `--as EMAIL`: that person checks (the operator role or up). */
  as?: string;
}

/**
 * `runwarden forecast --check [--json] [--forecast ID]` (docs/rules.md §2.12): checks every stored
 * forecast run whose run was restarted since (as the controllers' tick does), then prints each
 * stored forecast's checked runs — held, or what differed — and exits 4 when any differed (a
 * defect of the forecast or of recovery, never accepted silently), 0 otherwise. Runs not
 * restarted yet are counted, not listed. Audited as `forecast.check`.
 */
export async function runForecastCheck(io: CliIO, opts: ForecastCheckOptions): Promise<void> {
  await withCliDatabase("forecast", io, async (db, env) => {
    const [{ instanceIdOf }, { auditedCli, cliActor, machineActor }, { checkForecasts, describe }, { uuidSchema }] = await Promise.all([
      import("../../db/installation"),
      import("../actor"),
      import("../../forecasts/check"),
      import("../../lib/ids"),
    ]);
    const forecastIds = opts.forecast === undefined ? undefined : [uuidSchema.parse(opts.forecast)];
    const instanceId = await instanceIdOf(db, env.RUNWARDEN_INSTANCE_ID);
    // The operator role, as taking one (forecasts.take): a check writes each stored run's outcome.
    const actor = opts.as === undefined ? machineActor("operator") : (await cliActor(db, opts.as, "operator", "forecast.check")).actor;
    const newly = await auditedCli(db, actor, "forecast.check", { forecast: opts.forecast ?? null }, () => checkForecasts(db, instanceId, { limit: 10_000, forecastIds }));
    const rows = await db.forecastRun.findMany({
      where: { forecast: { instanceId, ...(forecastIds ? { id: { in: forecastIds } } : {}) } },
      select: { forecastId: true, runId: true, prediction: true, path: true, code: true, outcome: true, actual: true, checkedAt: true, forecast: { select: { createdAt: true, source: true, takenBy: true } } },
      orderBy: [{ forecast: { createdAt: "desc" } }, { runId: "asc" }],
      take: 10_000,
    });
    const counts = { held: 0, differed: 0, notRestarted: 0, waiting: 0 };
    const byForecast = new Map<string, { id: string; createdAt: string; source: string; takenBy: string; runs: Array<{ runId: string; outcome: string; forecast: string; actual: string; differences: Array<{ field: string; forecast: unknown; actual: unknown }>; checkedAt: string | null }> }>();
    for (const r of rows) {
      if (r.outcome === "held") counts.held += 1;
      else if (r.outcome === "differed") counts.differed += 1;
      else if (r.outcome === "not_restarted") counts.notRestarted += 1;
      else counts.waiting += 1;
      if (r.outcome !== "held" && r.outcome !== "differed") continue;
      const f = byForecast.get(r.forecastId) ?? { id: r.forecastId, createdAt: r.forecast.createdAt.toISOString(), source: r.forecast.source, takenBy: r.forecast.takenBy, runs: [] };
      byForecast.set(r.forecastId, f);
      const check = (r.actual ?? {}) as { actual?: { prediction: string; path: string | null; code: string | null; restingCode: string | null } | null; differences?: Array<{ field: string; forecast: unknown; actual: unknown }> };
      const actual = check.actual ? describe(check.actual.prediction, check.actual.path, check.actual.code ?? check.actual.restingCode) : "unknown";
      f.runs.push({ runId: r.runId, outcome: r.outcome, forecast: describe(r.prediction, r.path, r.code), actual, differences: check.differences ?? [], checkedAt: r.checkedAt?.toISOString() ?? null });
    }
    const lines: string[] = [];
    for (const f of byForecast.values()) {
      lines.push(`forecast ${f.id} (${f.createdAt}, ${f.source}, ${f.takenBy})`);
      for (const r of f.runs) {
        lines.push(
          r.outcome === "held"
            ? `  ${r.runId}  forecast held: ${r.forecast}`
            : `  ${r.runId}  DIFFERED: forecast ${r.forecast}, actual ${r.actual} (${r.differences.map((d) => `${d.field}: ${String(d.forecast)} -> ${String(d.actual)}`).join("; ")})`,
        );
      }
    }
    if (opts.json) {
      io.stdout(`${JSON.stringify({ checkedNow: newly.length, ...counts, forecasts: [...byForecast.values()] })}\n`);
    } else {
      for (const l of lines) io.stdout(`${l}\n`);
      io.stdout(`${counts.held} held, ${counts.differed} differed, ${counts.notRestarted} ended without a restart, ${counts.waiting} not restarted yet (${newly.length} checked now)\n`);
    }
    if (counts.differed > 0) throw new CliFailure(`runwarden forecast: ${counts.differed} forecast run${counts.differed === 1 ? "" : "s"} differed from what the restart did`, EXIT_FORECAST_MISSED);
  });
}
