import { alertForecastMissed } from "../alerts/events";
import { Prisma, type Db } from "../db/client";
import { checkForecastRun, type ForecastCheck, type ForecastClass, type RestartRecord } from "../engine";

/**
 * Checks stored forecasts against the restarts that followed them (docs/rules.md §2.12): for
 * each forecast run not yet checked whose run was claimed past the forecast's epoch (or
 * ended), the `recovery_started` events since the forecast and the proofs each restarted
 * controller stored after its event are handed to the engine's `checkForecastRun`; the
 * answer lands on the row (`outcome`, `actual`, `checked_at`) once, and a `differed` raises
 * `forecast.missed` in the same transaction. Runs on every controller's tick and from
 * `runwarden forecast --check`; two at once write each row once (`outcome IS NULL`).
 */

export interface CheckedForecastRun {
  forecastId: string;
  runId: string;
  companyId: string;
  taskId: string;
  prediction: string;
  path: string | null;
  code: string | null;
  check: ForecastCheck;
}

interface Candidate {
  forecast_id: string;
  run_id: string;
  created_at: Date;
  prediction: string;
  path: string | null;
  code: string | null;
  can_retry: boolean | null;
  status: string;
  failure_code: string | null;
  run_can_retry: boolean | null;
  company_id: string;
  task_id: string;
}

const TERMINAL = Prisma.sql`('succeeded', 'failed', 'cancelled')`;

export async function checkForecasts(db: Db, instanceId: string, options: { limit?: number; forecastIds?: readonly string[] } = {}): Promise<CheckedForecastRun[]> {
  const limit = options.limit ?? 200;
  // Only unchecked rows (the (outcome, forecast_id) index) whose run moved since: claimed past the forecast's epoch, or ended.
  const candidates = await db.$queryRaw<Candidate[]>`
    SELECT fr.forecast_id::text, fr.run_id::text, f.created_at, fr.prediction, fr.path, fr.code, fr.can_retry,
           r.status::text AS status, r.failure_code, r.can_retry AS run_can_retry, r.company_id, r.task_id
    FROM forecast_runs fr
    JOIN forecasts f ON f.id = fr.forecast_id
    JOIN runs r ON r.id = fr.run_id
    WHERE fr.outcome IS NULL AND f.instance_id = ${instanceId}
      AND (r.executor_epoch > fr.executor_epoch OR r.status::text IN ${TERMINAL})
      ${options.forecastIds ? Prisma.sql`AND fr.forecast_id = ANY(${[...options.forecastIds]}::uuid[])` : Prisma.empty}
    ORDER BY f.created_at, fr.run_id
    LIMIT ${limit}`;
  const checked: CheckedForecastRun[] = [];
  for (const c of candidates) {
    const restarts = await restartsSince(db, c.run_id, c.created_at);
    const check = checkForecastRun(
      { prediction: c.prediction as ForecastClass, path: c.path, code: c.code, canRetry: c.can_retry },
      restarts,
      { status: c.status, failureCode: c.failure_code, canRetry: c.run_can_retry },
    );
    if (!check) continue;
    const wrote = await db.$transaction(async (tx) => {
      const n = await tx.$executeRaw`
        UPDATE forecast_runs SET outcome = ${check.outcome}, actual = ${JSON.stringify(check)}::jsonb, checked_at = now()
        WHERE forecast_id = ${c.forecast_id}::uuid AND run_id = ${c.run_id}::uuid AND outcome IS NULL`;
      if (n === 1 && check.outcome === "differed") {
        await alertForecastMissed(tx, {
          instanceId,
          forecastId: c.forecast_id,
          runId: c.run_id,
          companyId: c.company_id,
          taskId: c.task_id,
          forecast: describe(c.prediction, c.path, c.code),
          actual: check.actual ? describe(check.actual.prediction, check.actual.path, check.actual.code ?? check.actual.restingCode) : "unknown",
          differences: check.differences.map((d) => `${d.field}: forecast ${String(d.forecast)}, actual ${String(d.actual)}`).join("; "),
        });
      }
      return n === 1;
    });
    if (wrote) checked.push({ forecastId: c.forecast_id, runId: c.run_id, companyId: c.company_id, taskId: c.task_id, prediction: c.prediction, path: c.path, code: c.code, check });
  }
  return checked;
}

/** "continues (reattach)", "ends (CODE)", "operator". */
export function describe(prediction: string, path: string | null, code: string | null): string {
  const detail = prediction === "continues" ? path : prediction === "ends" ? code : null;
  return detail ? `${prediction} (${detail})` : prediction;
}

/** Each restart of the run since `since`: its `recovery_started` event and the proofs its controller stored after it, up to the next one. */
async function restartsSince(db: Db, runId: string, since: Date): Promise<RestartRecord[]> {
  const events = await db.runEvent.findMany({ where: { runId, type: "recovery_started", at: { gte: since } }, orderBy: { id: "asc" }, select: { at: true, bootId: true } });
  if (events.length === 0) return [];
  const proofs = await db.proof.findMany({
    where: { runId, evaluatedAt: { gte: events[0]!.at } },
    orderBy: { evaluatedAt: "asc" },
    select: { kind: true, verdict: true, code: true, evaluatedAt: true, evaluatedBy: true },
  });
  return events.map((e, i) => {
    const next = events[i + 1]?.at;
    return {
      at: e.at.toISOString(),
      bootId: e.bootId,
      proofs: proofs
        .filter((p) => p.evaluatedAt >= e.at && (!next || p.evaluatedAt < next) && (e.bootId === null || p.evaluatedBy === e.bootId))
        .map((p) => ({ kind: p.kind, verdict: p.verdict, code: p.code })),
    };
  });
}
