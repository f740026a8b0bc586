import { z } from "zod";
import { Prisma, type Db } from "../db/client";
import { forecastCheckSchema, FORECAST_OUTCOMES } from "../engine";
import { AppError } from "../errors";
import { uuidSchema } from "../lib/ids";
import { FORECAST_PATHS, FORECAST_PREDICTIONS, forecastProofSchema } from "../shared/forecast";
import type { CompanyScope } from "../shared/roles";
import { FORECAST_SOURCES } from "./store";

/**
 * The stored forecasts as the console shows them: the latest, each with its counts and how
 * many runs were checked after a restart (held, differed, not restarted); one forecast with
 * its runs; the latest forecast of one run (the run page's line). A person sees the runs of
 * their companies only, and a forecast only when it holds one of them.
 */

export const forecastCheckedCountsSchema = z.object({ held: z.number().int(), differed: z.number().int(), notRestarted: z.number().int(), pending: z.number().int() });

export const forecastSummarySchema = z.object({
  id: z.string(),
  createdAt: z.string(),
  takenBy: z.string(),
  takenRole: z.string(),
  source: z.string(),
  waveId: z.string().nullable(),
  durationMs: z.number().int(),
  total: z.number().int(),
  continues: z.number().int(),
  ends: z.number().int(),
  operator: z.number().int(),
  checked: forecastCheckedCountsSchema,
});
export type ForecastSummary = z.infer<typeof forecastSummarySchema>;

export const forecastRunViewSchema = z.object({
  runId: z.string(),
  companyId: z.string(),
  taskId: z.string(),
  prediction: z.enum(FORECAST_PREDICTIONS),
  path: z.string().nullable(),
  code: z.string().nullable(),
  owner: z.string().nullable(),
  canRetry: z.boolean().nullable(),
  reason: z.string(),
  proofs: z.array(forecastProofSchema),
  status: z.string(),
  phase: z.string().nullable(),
  executorEpoch: z.number().int(),
  outcome: z.enum(FORECAST_OUTCOMES).nullable(),
  check: forecastCheckSchema.nullable(),
  checkedAt: z.string().nullable(),
});
export type ForecastRunView = z.infer<typeof forecastRunViewSchema>;

export const forecastListInput = z.object({
  source: z.enum(FORECAST_SOURCES).optional(),
  limit: z.number().int().min(1).max(100).default(20),
});
export const forecastGetInput = z.object({
  id: uuidSchema,
  prediction: z.enum(FORECAST_PREDICTIONS).optional(),
  outcome: z.enum([...FORECAST_OUTCOMES, "pending"]).optional(),
});
export const forecastForRunInput = z.object({ runId: uuidSchema });

/** `runs.company_id` within the person's companies. */
function runScope(scope: CompanyScope): Prisma.Sql {
  if (scope.all) return Prisma.sql`true`;
  return scope.companies.length ? Prisma.sql`r.company_id IN (${Prisma.join(scope.companies)})` : Prisma.sql`false`;
}

interface SummaryRow {
  id: string;
  created_at: Date;
  taken_by: string;
  taken_role: string;
  source: string;
  wave_id: string | null;
  duration_ms: number;
  total: number;
  continues: number;
  ends: number;
  operator: number;
  held: number;
  differed: number;
  not_restarted: number;
  pending: number;
}

async function summaries(db: Db, instanceId: string, scope: CompanyScope, where: Prisma.Sql, limit: number): Promise<ForecastSummary[]> {
  // The counts of the runs this person sees (all of them for every company); a forecast of none of theirs is not listed.
  const rows = await db.$queryRaw<SummaryRow[]>`
    SELECT f.id::text, f.created_at, f.taken_by, f.taken_role, f.source, f.wave_id, f.duration_ms,
      ${scope.all ? Prisma.sql`f.total` : Prisma.sql`count(v.run_id)::int`} AS total,
      ${scope.all ? Prisma.sql`f.continues` : Prisma.sql`(count(*) FILTER (WHERE v.prediction = 'continues'))::int`} AS continues,
      ${scope.all ? Prisma.sql`f.ends` : Prisma.sql`(count(*) FILTER (WHERE v.prediction = 'ends'))::int`} AS ends,
      ${scope.all ? Prisma.sql`f.operator` : Prisma.sql`(count(*) FILTER (WHERE v.prediction = 'operator'))::int`} AS operator,
      (count(*) FILTER (WHERE v.outcome = 'held'))::int AS held,
      (count(*) FILTER (WHERE v.outcome = 'differed'))::int AS differed,
      (count(*) FILTER (WHERE v.outcome = 'not_restarted'))::int AS not_restarted,
      (count(v.run_id) FILTER (WHERE v.outcome IS NULL))::int AS pending
    FROM forecasts f
    LEFT JOIN (SELECT fr.forecast_id, fr.run_id, fr.prediction, fr.outcome FROM forecast_runs fr JOIN runs r ON r.id = fr.run_id WHERE ${runScope(scope)}) v ON v.forecast_id = f.id
    WHERE f.instance_id = ${instanceId} AND ${where}
    GROUP BY f.id
    ${scope.all ? Prisma.empty : Prisma.sql`HAVING count(v.run_id) > 0`}
    ORDER BY f.created_at DESC, f.id DESC
    LIMIT ${limit}`;
  return rows.map((r) => ({
    id: r.id,
    createdAt: r.created_at.toISOString(),
    takenBy: r.taken_by,
    takenRole: r.taken_role,
    source: r.source,
    waveId: r.wave_id,
    durationMs: r.duration_ms,
    total: r.total,
    continues: r.continues,
    ends: r.ends,
    operator: r.operator,
    checked: { held: r.held, differed: r.differed, notRestarted: r.not_restarted, pending: r.pending },
  }));
}

export async function listForecasts(db: Db, instanceId: string, scope: CompanyScope, input: z.infer<typeof forecastListInput>): Promise<ForecastSummary[]> {
  return summaries(db, instanceId, scope, input.source ? Prisma.sql`f.source = ${input.source}` : Prisma.sql`true`, input.limit);
}

const runSelect = {
  runId: true,
  prediction: true,
  path: true,
  code: true,
  owner: true,
  canRetry: true,
  reason: true,
  proofs: true,
  status: true,
  phase: true,
  executorEpoch: true,
  outcome: true,
  actual: true,
  checkedAt: true,
} as const;

type RunRow = Prisma.ForecastRunGetPayload<{ select: typeof runSelect }>;

function runView(r: RunRow, run: { companyId: string; taskId: string }): ForecastRunView {
  const proofs = z.array(forecastProofSchema).safeParse(r.proofs);
  const check = forecastCheckSchema.safeParse(r.actual);
  return {
    runId: r.runId,
    companyId: run.companyId,
    taskId: run.taskId,
    prediction: z.enum(FORECAST_PREDICTIONS).parse(r.prediction),
    path: r.path,
    code: r.code,
    owner: r.owner,
    canRetry: r.canRetry,
    reason: r.reason,
    proofs: proofs.success ? proofs.data : [],
    status: r.status,
    phase: r.phase,
    executorEpoch: r.executorEpoch,
    outcome: r.outcome === null ? null : z.enum(FORECAST_OUTCOMES).parse(r.outcome),
    check: r.actual === null || !check.success ? null : check.data,
    checkedAt: r.checkedAt?.toISOString() ?? null,
  };
}

export const forecastDetailSchema = forecastSummarySchema.extend({ runs: z.array(forecastRunViewSchema) });

export async function getForecast(db: Db, instanceId: string, scope: CompanyScope, input: z.infer<typeof forecastGetInput>): Promise<z.infer<typeof forecastDetailSchema>> {
  const [summary] = await summaries(db, instanceId, scope, Prisma.sql`f.id = ${input.id}::uuid`, 1);
  if (!summary) throw new AppError("NOT_FOUND", `forecast ${input.id} not found`);
  const rows = await db.forecastRun.findMany({
    where: {
      forecastId: input.id,
      ...(input.prediction ? { prediction: input.prediction } : {}),
      ...(input.outcome ? { outcome: input.outcome === "pending" ? null : input.outcome } : {}),
    },
    select: runSelect,
    orderBy: { runId: "asc" },
    take: 1000,
  });
  const runs = await db.run.findMany({ where: { id: { in: rows.map((r) => r.runId) } }, select: { id: true, companyId: true, taskId: true } });
  const byId = new Map(runs.map((r) => [r.id, r]));
  const visible = rows.flatMap((r) => {
    const run = byId.get(r.runId);
    if (!run || (!scope.all && !scope.companies.includes(run.companyId))) return [];
    return [runView(r, run)];
  });
  return { ...summary, runs: visible };
}

export const forecastForRunSchema = forecastRunViewSchema.extend({ forecastId: z.string(), takenAt: z.string(), takenBy: z.string() }).nullable();

/** The latest stored forecast of one run, and whether it held (the run page's "Restart forecast" line). */
export async function latestForecastOfRun(db: Db, instanceId: string, scope: CompanyScope, runId: string): Promise<z.infer<typeof forecastForRunSchema>> {
  const run = await db.run.findFirst({ where: { id: runId, instanceId }, select: { companyId: true, taskId: true } });
  if (!run || (!scope.all && !scope.companies.includes(run.companyId))) throw new AppError("NOT_FOUND", `run ${runId} not found`);
  const row = await db.forecastRun.findFirst({
    where: { runId, forecast: { instanceId } },
    orderBy: { forecast: { createdAt: "desc" } },
    select: { ...runSelect, forecastId: true, forecast: { select: { createdAt: true, takenBy: true } } },
  });
  if (!row) return null;
  return { ...runView(row, run), forecastId: row.forecastId, takenAt: row.forecast.createdAt.toISOString(), takenBy: row.forecast.takenBy };
}

/** The path names a forecast may carry (re-exported for the page's legend). */
export { FORECAST_PATHS };
