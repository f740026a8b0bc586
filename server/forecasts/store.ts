import { writeAudit, type Actor } from "../audit/write";
import type { Db, Prisma } from "../db/client";
import type { Forecast } from "../shared/forecast";
import type { CompanyScope } from "../shared/roles";

/** Where a stored forecast was taken from. */
export const FORECAST_SOURCES = ["cli", "console", "wave", "api"] as const;
export type ForecastSource = (typeof FORECAST_SOURCES)[number];

/** What is stored of a forecast: `takeForecast`'s answer (its `takenAt` is the row's `created_at`). */
export type ForecastToStore = Pick<Forecast, "durationMs" | "runs">;

export interface StoreForecastOptions {
  instanceId: string;
  actor: Actor;
  source: ForecastSource;
  scope: CompanyScope;
  waveId?: string | null;
}

const asJson = (v: unknown) => JSON.parse(JSON.stringify(v ?? null)) as Prisma.InputJsonValue;

/**
 * Stores a forecast and its per-run predictions with their proofs and evidence, with its
 * audit entry (`forecast.take`) in the same transaction. The runs' executor epochs are kept:
 * the check after the next restart (`server/forecasts/check.ts`) looks for a claim past them.
 */
export async function storeForecast(db: Db, forecast: ForecastToStore, o: StoreForecastOptions): Promise<{ id: string; createdAt: Date }> {
  const counts = { continues: 0, ends: 0, operator: 0 };
  for (const r of forecast.runs) counts[r.prediction] += 1;
  return db.$transaction(async (tx) => {
    const row = await tx.forecast.create({
      data: {
        instanceId: o.instanceId,
        takenBy: o.actor.id,
        takenRole: o.actor.role,
        source: o.source,
        scope: asJson(o.scope),
        waveId: o.waveId ?? null,
        total: forecast.runs.length,
        ...counts,
        durationMs: Math.max(0, Math.round(forecast.durationMs)),
      },
    });
    if (forecast.runs.length) {
      await tx.forecastRun.createMany({
        data: forecast.runs.map((r) => ({
          forecastId: row.id,
          runId: r.runId,
          prediction: r.prediction,
          path: r.path,
          code: r.code,
          owner: r.owner,
          canRetry: r.canRetry,
          reason: r.reason,
          proofs: asJson(r.proofs),
          evidence: asJson(r.evidence),
          executorBootId: r.executorBootId,
          executorEpoch: r.executorEpoch,
          status: r.status,
          phase: r.phase,
        })),
      });
    }
    await writeAudit(tx, o.actor, {
      action: "forecast.take",
      targetType: "forecast",
      targetId: row.id,
      input: { source: o.source, scope: o.scope, waveId: o.waveId ?? null },
      outcome: "ok",
      detail: { total: forecast.runs.length, ...counts, durationMs: row.durationMs },
    });
    return { id: row.id, createdAt: row.createdAt };
  });
}
