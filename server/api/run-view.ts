import { z } from "zod";
import type { RunDetail } from "../runs/detail";

/**
 * A run as a platform reads it (docs/api.md): its state, who owns what comes next, whether Retry
 * is offered, the plain reason and the run that carries the task now — the dashboard's run page
 * in one object, without the timeline. Made from the same read (`runs.get`, runs/detail.ts).
 */
export const apiRunSchema = z.object({
  id: z.string(),
  companyId: z.string(),
  taskId: z.string(),
  externalId: z.string().nullable(),
  status: z.string(),
  phase: z.string().nullable(),
  turnsPlanned: z.number().int(),
  turnsDone: z.number().int(),
  restarts: z.number().int(),
  failureCode: z.string().nullable(),
  /** Who acts next on a failure: agent, board, operator, system (the failure catalogue, docs/rules.md §3). */
  owner: z.string(),
  /** The failure in plain words (the catalogue's sentence), null while it has not failed. */
  reason: z.string().nullable(),
  nextAction: z.string().nullable(),
  /** Retry may be asked for: the run failed with Retry offered and was not retried yet. */
  retryOffered: z.boolean(),
  /** Why Retry is not offered, in plain words (or the successor it already made); null when it is. */
  retryBlocker: z.string().nullable(),
  cancelOffered: z.boolean(),
  /** The one run a Retry made, if any. */
  successorId: z.string().nullable(),
  /** The run that carries the task now down the Retry chain (null while this run was not retried). */
  currentRunId: z.string().nullable(),
  previousRunId: z.string().nullable(),
  cancelledBy: z.string().nullable(),
  cancelReason: z.string().nullable(),
  createdAt: z.date(),
  startedAt: z.date().nullable(),
  finishedAt: z.date().nullable(),
});
export type ApiRun = z.infer<typeof apiRunSchema>;

export function apiRunOf(d: RunDetail): ApiRun {
  const r = d.run;
  return {
    id: r.id,
    companyId: r.companyId,
    taskId: r.taskId,
    externalId: r.externalId,
    status: r.status,
    phase: r.phase,
    turnsPlanned: r.turnsPlanned,
    turnsDone: r.turnsDone,
    restarts: r.restarts,
    failureCode: r.failureCode,
    owner: r.owner,
    reason: d.failure?.message ?? null,
    nextAction: d.failure?.nextAction ?? null,
    // Retry is idempotent (a repeat answers the same successor), but once it was made it is not offered again.
    retryOffered: d.retry.blocker === null && d.retry.successorId === null,
    retryBlocker: d.retry.blocker ?? (d.retry.successorId ? `already retried as run ${d.retry.successorId}` : null),
    cancelOffered: d.cancel.blocker === null,
    successorId: d.retry.successorId,
    currentRunId: d.retry.current?.id ?? null,
    previousRunId: d.lineage.previous.at(-1)?.id ?? null,
    cancelledBy: r.cancelledBy,
    cancelReason: r.cancelReason,
    createdAt: r.createdAt,
    startedAt: r.startedAt,
    finishedAt: r.finishedAt,
  };
}
