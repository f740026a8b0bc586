import type { Db, Prisma } from "../db/client";
import { crossedCostThreshold, type RunAlertData, type RunEndedAlertData } from "../engine/alerts";
import { dashboardLink, emitAlert } from "./outbox";

/**
 * The events, each written in the transaction of the change it reports, each with a dedupe
 * key naming that change (so two controllers, or a retried transaction, write one row).
 */

type Tx = Db | Prisma.TransactionClient;

/** What a failed run's row says (the run as `finishRunFailed` just wrote it). */
export interface FailedRun {
  id: string;
  instanceId: string;
  companyId: string;
  taskId: string;
  agent: string;
  failureCode: string | null;
  failureDetail: string | null;
  owner: string;
  canRetry: boolean;
  nextAction: string | null;
  recoveryAttempts: number;
}

/**
 * A run's row as the transaction that ended it just wrote it (`finishRunFailed`,
 * `finishRunSucceeded` in controller/outcome.ts, `cancelInTransaction` in controller/cancel.ts).
 */
export interface EndedRun extends FailedRun {
  status: string;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
  /** The platform's own id of the run (`runs.external_id`) when it was submitted with one, else null. */
  externalId: string | null;
}

/**
 * The one door for a run's ending alert, in the transaction that ends it: the type by the
 * status just written — `run.failed` (and `run.recovery_exhausted`), `run.succeeded`,
 * `run.cancelled`. Each is keyed `<type>:<runId>`, so however often an ending is written (a
 * retried transaction, two controllers) the run has one event of it.
 */
export async function emitRunEnded(tx: Tx, run: EndedRun, opts: { recoveryExhausted?: boolean } = {}): Promise<void> {
  switch (run.status) {
    case "failed":
      return alertRunFailed(tx, run, opts.recoveryExhausted ?? false);
    case "succeeded":
    case "cancelled": {
      const base: Omit<RunEndedAlertData, "status"> = {
        runId: run.id,
        companyId: run.companyId,
        taskId: run.taskId,
        agent: run.agent,
        externalId: run.externalId,
        failureCode: null,
        createdAt: run.createdAt.toISOString(),
        startedAt: run.startedAt?.toISOString() ?? null,
        finishedAt: (run.finishedAt ?? new Date()).toISOString(),
        url: dashboardLink(`/runs/${run.id}`),
      };
      const event = run.status === "succeeded" ? { type: "run.succeeded" as const, data: { ...base, status: "succeeded" as const } } : { type: "run.cancelled" as const, data: { ...base, status: "cancelled" as const } };
      await emitAlert(tx, run.instanceId, event, `${event.type}:${run.id}`);
      return;
    }
    default:
      throw new Error(`run ${run.id}: status ${run.status} is not an ending`);
  }
}

/** run.failed for every run that ends failed; run.recovery_exhausted too when recovery gave up on it. */
export async function alertRunFailed(tx: Tx, run: FailedRun, recoveryExhausted: boolean): Promise<void> {
  const data: RunAlertData = {
    runId: run.id,
    companyId: run.companyId,
    taskId: run.taskId,
    agent: run.agent,
    code: run.failureCode ?? "unknown",
    owner: run.owner,
    canRetry: run.canRetry,
    nextAction: run.nextAction,
    detail: run.failureDetail ?? "",
    url: dashboardLink(`/runs/${run.id}`),
  };
  await emitAlert(tx, run.instanceId, { type: "run.failed", data }, `run.failed:${run.id}`);
  if (recoveryExhausted) {
    await emitAlert(tx, run.instanceId, { type: "run.recovery_exhausted", data: { ...data, attempts: run.recoveryAttempts } }, `run.recovery_exhausted:${run.id}`);
  }
}

/**
 * `provider.outage_started` of one outage (`judgeOutageAlert`, carried out by
 * `controller/outage-alerts.ts` under the outage's advisory lock): the outage's id is the
 * dedupe key, so it is written once whoever writes it.
 */
export async function alertOutageStarted(
  tx: Tx,
  input: { instanceId: string; outageId: string; provider: string; since: string; lastError: string | null; controller: string },
): Promise<void> {
  const type = "provider.outage_started";
  const data = { outageId: input.outageId, provider: input.provider, since: input.since, lastError: input.lastError, controller: input.controller, url: dashboardLink("/") };
  await emitAlert(tx, input.instanceId, { type, data }, `${type}:${input.outageId}`);
}

/** `provider.outage_ended` of one outage whose started went out: once, by the outage's id. */
export async function alertOutageEnded(
  tx: Tx,
  input: { instanceId: string; outageId: string; provider: string; since: string; endedAt: string; controller: string },
): Promise<void> {
  const type = "provider.outage_ended";
  const downSeconds = Math.max(0, Math.round((Date.parse(input.endedAt) - Date.parse(input.since)) / 1000));
  const data = { outageId: input.outageId, provider: input.provider, since: input.since, endedAt: input.endedAt, downSeconds, controller: input.controller, url: dashboardLink("/") };
  await emitAlert(tx, input.instanceId, { type, data }, `${type}:${input.outageId}`);
}

/** The orphans' cost rate of the inventory as stored (USD per hour), and how many orphans. */
export async function orphanCostRate(tx: Tx, instanceId: string): Promise<{ ratePerHour: number; orphans: number }> {
  const [row] = await tx.$queryRaw<Array<{ rate: number | null; n: number }>>`
    SELECT sum(hourly_cost)::float8 AS rate, count(*)::int AS n FROM sandbox_inventory WHERE instance_id = ${instanceId} AND verdict IS NOT NULL`;
  return { ratePerHour: row?.rate ?? 0, orphans: row?.n ?? 0 };
}

/** orphans.cost_over, once per crossing: the pass before was under the threshold, this one is at or over it. */
export async function alertOrphanCost(
  tx: Tx,
  input: { instanceId: string; previousRatePerHour: number; ratePerHour: number; orphans: number; thresholdPerHour: number | null; passAt: Date },
): Promise<void> {
  if (!crossedCostThreshold(input.previousRatePerHour, input.ratePerHour, input.thresholdPerHour) || input.thresholdPerHour === null) return;
  await emitAlert(
    tx,
    input.instanceId,
    {
      type: "orphans.cost_over",
      data: {
        ratePerHour: input.ratePerHour,
        thresholdPerHour: input.thresholdPerHour,
        previousRatePerHour: input.previousRatePerHour,
        orphans: input.orphans,
        url: dashboardLink("/orphans"),
      },
    },
    `orphans.cost_over:${input.instanceId}:${input.passAt.toISOString()}`,
  );
}

/** wave.failed, once per wave. */
export async function alertWaveFailed(tx: Tx, wave: { id: string; instanceId: string; companyId: string; seed: number; tasks: number; failedTasks: number }): Promise<void> {
  await emitAlert(
    tx,
    wave.instanceId,
    { type: "wave.failed", data: { waveId: wave.id, companyId: wave.companyId, seed: wave.seed, tasks: wave.tasks, failedTasks: wave.failedTasks, url: dashboardLink(`/waves/${wave.id}`) } },
    `wave.failed:${wave.id}`,
  );
}

/** forecast.missed, once per forecast run: its restart did not do what was forecast (§2.12). */
export async function alertForecastMissed(
  tx: Tx,
  input: { instanceId: string; forecastId: string; runId: string; companyId: string; taskId: string; forecast: string; actual: string; differences: string },
): Promise<void> {
  const { instanceId, ...data } = input;
  await emitAlert(tx, instanceId, { type: "forecast.missed", data: { ...data, url: dashboardLink(`/forecast?forecast=${input.forecastId}`) } }, `forecast.missed:${input.forecastId}:${input.runId}`);
}
