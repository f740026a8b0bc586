import { writeAudit, type Actor } from "../audit/write";
import { Prisma, type Db, type Run } from "../db/client";
import { admitRetry, assertNever, LIVE_RUN_STATUSES } from "../engine";
import { AppError, type AppErrorCode } from "../errors";
import { inScope, type CompanyScope } from "../shared/roles";

export interface RetryResult {
  run: Run;
  /** False when this Retry found the successor an earlier Retry made. */
  created: boolean;
  /** The previous run's leases handed to cleanup by this Retry. */
  leasesQueued: string[];
}

/** The task's other live run, the one fact Retry admission reads from the database. */
export async function otherLiveRun(db: Db | Prisma.TransactionClient, run: Pick<Run, "id" | "companyId" | "taskId">): Promise<{ id: string; status: string } | null> {
  return db.run.findFirst({ where: { companyId: run.companyId, taskId: run.taskId, id: { not: run.id }, status: { in: [...LIVE_RUN_STATUSES] } }, select: { id: true, status: true } });
}

/**
 * Retry (docs/rules.md §2.7): admitted when the run ended in a terminal failure with Retry
 * and its task has no other active run. The admission and the one new run happen in
 * one transaction under the old run's row lock, so a double click, two tabs or two
 * servers all get the same successor. The old run's leases are handed to cleanup. A Retry
 * that loses to another run of the same task (another failed run's Retry, a submit) is a
 * refusal with an audit entry and a CONFLICT, never a 500.
 */
export async function retryRun(db: Db, runId: string, actor: Actor, scope: CompanyScope = { all: true }): Promise<RetryResult> {
  let outcome: RetryResult | Refusal;
  try {
    outcome = await db.$transaction((tx) => retryInTransaction(tx, runId, actor, scope, { audit: true }));
  } catch (err) {
    if (!isUniqueViolation(err)) throw err;
    // The unique indexes are the last word when two transactions raced past their locks: the
    // lineage index (a double Retry of this run: its one successor), or the task's one live
    // run (a Retry of another failed run of the same task committed first: docs/rules.md §2.7).
    const successor = await db.run.findUnique({ where: { previousRunId: runId } });
    if (successor) return { run: successor, created: false, leasesQueued: [] };
    outcome = await raceRefusal(db, runId);
  }
  if ("refused" in outcome) {
    // Written outside the admission transaction, which had nothing to commit.
    await writeAudit(db, actor, { action: "run.retry", targetType: "run", targetId: runId, companyId: outcome.companyId, outcome: "refused", detail: { reason: outcome.refused, ...(outcome.raced ? { raced: true } : {}) } });
    throw new AppError(refusalCode(outcome.reason), outcome.refused);
  }
  return outcome;
}

/** A unique index refused the write: two transactions raced past their locks. */
export function isUniqueViolation(err: unknown): boolean {
  return err instanceof Prisma.PrismaClientKnownRequestError && err.code === "P2002";
}

/**
 * One run's Retry inside the caller's transaction: the run's row lock, the engine's admission
 * on what is committed now, and the one new run. Bulk Retry runs it under its plan item's lock
 * (`audit: false`: the plan writes one entry for all its runs). A run outside `scope` reads as
 * one that does not exist (NOT_FOUND). A refusal is returned, not thrown: the caller audits it.
 */
export async function retryInTransaction(tx: Prisma.TransactionClient, runId: string, actor: Actor, scope: CompanyScope, opts: { audit: boolean }): Promise<RetryResult | Refusal> {
  const locked = await tx.$queryRaw<Array<{ id: string; company_id: string }>>`SELECT id, company_id FROM runs WHERE id = ${runId}::uuid FOR UPDATE`;
  // Another company's run reads exactly like one that does not exist (no id guessing).
  if (locked.length === 0 || !inScope(scope, locked[0]!.company_id)) throw new AppError("NOT_FOUND", `run ${runId} does not exist`);
  const run = await tx.run.findUniqueOrThrow({ where: { id: runId }, include: { nextRun: true } });
  // The engine decides (§2.7); the database supplies the successor and the task's other live run.
  const first = admitRetry({ run, successorId: run.nextRun?.id ?? null, otherLiveRun: null });
  const admission = first.verdict === "admitted" ? admitRetry({ run, successorId: null, otherLiveRun: await otherLiveRun(tx, run) }) : first;
  if (admission.verdict === "existing_successor" && run.nextRun) {
    if (opts.audit) await writeAudit(tx, actor, { action: "run.retry", targetType: "run", targetId: runId, companyId: run.companyId, outcome: "ok", detail: { successor: run.nextRun.id, created: false } });
    return { run: run.nextRun, created: false, leasesQueued: [] };
  }
  if (admission.verdict === "refused") return { refused: admission.refusal, reason: admission.reason, companyId: run.companyId };
  const next = await tx.run.create({
    data: {
      instanceId: run.instanceId,
      companyId: run.companyId,
      taskId: run.taskId,
      agent: run.agent,
      provider: run.provider,
      target: run.target,
      sandboxMode: run.sandboxMode,
      turnsPlanned: run.turnsPlanned,
      agentCommand: run.agentCommand,
      turnTimeoutMs: run.turnTimeoutMs,
      demoSleepMs: run.demoSleepMs,
      // The platform's id carries over: the successor's ending is heard under it (docs/api.md).
      externalId: run.externalId,
      maxProviderAttempts: run.maxProviderAttempts,
      previousRunId: run.id,
      waveId: run.waveId,
    },
  });
  const leases = await tx.environmentLease.findMany({ where: { runId: run.id, status: "active" }, select: { id: true } });
  if (leases.length) {
    await tx.environmentLease.updateMany({ where: { id: { in: leases.map((l) => l.id) } }, data: { status: "pending_cleanup", cleanupStatus: "retry", nextCleanupAt: null } });
  }
  await tx.runEvent.create({ data: { runId: run.id, type: "retried", data: { successor: next.id, by: actor.id } } });
  await tx.runEvent.create({ data: { runId: next.id, type: "created", data: { retryOf: run.id, by: actor.id } } });
  if (opts.audit) await writeAudit(tx, actor, { action: "run.retry", targetType: "run", targetId: runId, companyId: run.companyId, outcome: "ok", detail: { successor: next.id, created: true } });
  return { run: next, created: true, leasesQueued: leases.map((l) => l.id) };
}

export type Refusal = { refused: string; reason: RefusalReason; companyId: string; raced?: boolean };
export type RefusalReason = Extract<ReturnType<typeof admitRetry>, { verdict: "refused" }>["reason"];

/** A task busy with another run is a conflict (reload and see it); the rest are not offered in the run's state. */
function refusalCode(reason: RefusalReason): AppErrorCode {
  switch (reason) {
    case "task_busy":
      return "CONFLICT";
    case "not_terminal_failure":
    case "scheduled_retry":
    case "retry_not_offered":
      return "PRECONDITION_FAILED";
    default:
      return assertNever(reason);
  }
}

/**
 * The run's Retry lost the race for its task's one live run: the engine judges it again on
 * what is committed now (the winner's run is there to see), so the board user reads the same
 * sentence a Retry one moment later would have read.
 */
async function raceRefusal(db: Db, runId: string): Promise<Refusal> {
  const run = await db.run.findUniqueOrThrow({ where: { id: runId } });
  const admission = admitRetry({ run, successorId: null, otherLiveRun: await otherLiveRun(db, run) });
  if (admission.verdict === "refused") return { refused: admission.refusal, reason: admission.reason, companyId: run.companyId, raced: true };
  // The winner's run ended already: still no second successor from this call; the user tries again.
  return {
    refused: `Another run of task ${run.taskId} was started at the same moment; reload the run and Retry again if it is still needed.`,
    reason: "task_busy",
    companyId: run.companyId,
    raced: true,
  };
}
