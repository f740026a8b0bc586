import { writeAudit, type Actor } from "../audit/write";
import { Prisma, type Db, type Run } from "../db/client";
import { admitRetry, LIVE_RUN_STATUSES } from "../engine";
import { AppError } from "../errors";
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
 * Retry (DOMAIN.md §2.7): admitted when the run ended in a terminal failure with Retry
 * and its task has no other active run. The admission and the one new run happen in
 * one transaction under the old run's row lock, so a double click, two tabs or two
 * servers all get the same successor. The old run's leases are handed to cleanup.
 */
export async function retryRun(db: Db, runId: string, actor: Actor, scope: CompanyScope = { all: true }): Promise<RetryResult> {
  let outcome: RetryResult | { refused: string; companyId: string };
  try {
    outcome = await db.$transaction(async (tx): Promise<RetryResult | { refused: string; companyId: string }> => {
      const locked = await tx.$queryRaw<Array<{ id: string; company_id: string }>>`SELECT id, company_id FROM runs WHERE id = ${runId}::uuid FOR UPDATE`;
      // Another company's run reads exactly like one that does not exist (no id guessing).
      if (locked.length === 0 || !inScope(scope, locked[0]!.company_id)) throw new AppError("NOT_FOUND", `run ${runId} does not exist`);
      const run = await tx.run.findUniqueOrThrow({ where: { id: runId }, include: { nextRun: true } });
      // The engine decides (§2.7); the database supplies the successor and the task's other live run.
      const first = admitRetry({ run, successorId: run.nextRun?.id ?? null, otherLiveRun: null });
      const admission = first.verdict === "admitted" ? admitRetry({ run, successorId: null, otherLiveRun: await otherLiveRun(tx, run) }) : first;
      if (admission.verdict === "existing_successor" && run.nextRun) {
        await writeAudit(tx, actor, { action: "run.retry", targetType: "run", targetId: runId, companyId: run.companyId, outcome: "ok", detail: { successor: run.nextRun.id, created: false } });
        return { run: run.nextRun, created: false, leasesQueued: [] };
      }
      if (admission.verdict === "refused") return { refused: admission.refusal, companyId: run.companyId };
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
      await writeAudit(tx, actor, { action: "run.retry", targetType: "run", targetId: runId, companyId: run.companyId, outcome: "ok", detail: { successor: next.id, created: true } });
      return { run: next, created: true, leasesQueued: leases.map((l) => l.id) };
    });
  } catch (err) {
    // The unique lineage index is the last word if two transactions raced past the lock.
    if (err instanceof Prisma.PrismaClientKnownRequestError && err.code === "P2002") {
      const successor = await db.run.findUnique({ where: { previousRunId: runId } });
      if (successor) return { run: successor, created: false, leasesQueued: [] };
    }
    throw err;
  }
  if ("refused" in outcome) {
    // Written outside the admission transaction, which had nothing to commit.
    await writeAudit(db, actor, { action: "run.retry", targetType: "run", targetId: runId, companyId: outcome.companyId, outcome: "refused", detail: { reason: outcome.refused } });
    throw new AppError("PRECONDITION_FAILED", outcome.refused);
  }
  return outcome;
}
