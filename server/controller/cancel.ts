import { z } from "zod";
import { writeAudit, type Actor } from "../audit/write";
import type { EnvironmentLease } from "../db/client";
import { admitCancel, assertNever } from "../engine";
import { AppError } from "../errors";
import { isUuid } from "../lib/ids";
import { CANCEL_REASON_MAX } from "../shared/limits";
import { inScope, type CompanyScope } from "../shared/roles";
import type { ControllerContext } from "./context";
import { takeDownLeases, type TeardownOutcome } from "./teardown";

/**
 * What one Cancel did (DOMAIN.md §2.11): the run cancelled with each lease's teardown, or
 * refused with the sentence a board user reads. The controller's answer, the tRPC output and
 * the CLI's JSON share it (re-exported by server/services).
 */
export const cancelOutcomeSchema = z.discriminatedUnion("result", [
  z.object({ result: z.literal("cancelled"), runId: z.string(), leases: z.array(z.object({ leaseId: z.string(), outcome: z.string() })) }),
  z.object({ result: z.literal("refused"), runId: z.string(), reason: z.string(), refusal: z.string() }),
]);
export type CancelOutcome = z.infer<typeof cancelOutcomeSchema>;

export interface CancelOptions {
  /** Why, in the person's words (kept on the run and shown on its page). */
  reason?: string;
  /** The bulk plan this cancel carries out, when it is one. */
  planId?: string;
}

export { CANCEL_REASON_MAX };

interface LockedRun {
  id: string;
  company_id: string;
  status: string;
  executor_epoch: number;
  executor_boot_id: string | null;
  phase: string | null;
  cancelled_by: string | null;
  cancel_reason: string | null;
}

/**
 * Cancel (DOMAIN.md §2.11). One transaction under the run's row lock judges the run with
 * `admitCancel` and, when admitted, takes it over by compare-and-set on its executor epoch
 * (§2.10: epoch + 1, so whatever its executor writes next matches nothing), rests it in
 * `cancelled` with who and why, appends the `cancelled` event, takes its active leases out
 * of service and writes the audit entry. Two cancels of one run (two tabs, a bulk plan and a
 * person) queue on the lock: the second reads `cancelled` and is refused. After the commit
 * the runners are stopped and the sandboxes torn down by the teardown machinery (a claim and
 * its fence, the `sandbox_ownership` proof); a teardown that fails leaves its lease
 * `pending_cleanup` for the sweep, and the outcome says so.
 */
export async function cancelRun(ctx: ControllerContext, scope: CompanyScope, actor: Actor, runId: string, options: CancelOptions = {}): Promise<CancelOutcome> {
  const reason = options.reason?.trim().slice(0, CANCEL_REASON_MAX) || null;
  const planId = options.planId ?? null;
  // A malformed id names no run (a caller that skipped the input schema gets NOT_FOUND, not a database error).
  if (!isUuid(runId)) throw new AppError("NOT_FOUND", `run ${runId} does not exist`);
  const taken = await ctx.db.$transaction(async (tx) => {
    const [run] = await tx.$queryRaw<LockedRun[]>`
      SELECT id::text, company_id, status::text, executor_epoch, executor_boot_id, phase, cancelled_by, cancel_reason
      FROM runs WHERE id = ${runId}::uuid FOR UPDATE`;
    // Another company's run reads exactly like one that does not exist (no id guessing).
    if (!run || !inScope(scope, run.company_id)) throw new AppError("NOT_FOUND", `run ${runId} does not exist`);
    const admission = admitCancel({ run: { status: run.status, cancelledBy: run.cancelled_by, cancelReason: run.cancel_reason } });
    if (admission.verdict === "refused") return { taken: false as const, refused: admission, companyId: run.company_id };
    const epoch = run.executor_epoch + 1;
    // The takeover: conditional on the epoch read under the lock, so it is the only writer.
    const { count } = await tx.run.updateMany({
      where: { id: runId, executorEpoch: run.executor_epoch },
      data: {
        status: "cancelled",
        executorEpoch: epoch,
        executorBootId: null,
        finishedAt: new Date(),
        cancelledBy: actor.id,
        cancelReason: reason,
        // It rests: nothing schedules it again (a retryable failure's retry, a recovery back-off, an outage wait).
        outcome: null,
        retryAt: null,
        recoveryNotBefore: null,
        providerWaitSince: null,
      },
    });
    if (count !== 1) throw new Error(`run ${runId}: its epoch moved under the row lock`);
    const marked: EnvironmentLease[] = await tx.environmentLease.updateManyAndReturn({
      where: { runId, status: "active" },
      data: { status: "pending_cleanup", cleanupStatus: "cancel", nextCleanupAt: null },
    });
    const detail = {
      by: actor.id,
      reason,
      epoch,
      previousEpoch: run.executor_epoch,
      wasStatus: run.status,
      phase: run.phase,
      executorWas: run.executor_boot_id,
      leases: marked.map((l) => l.id),
      ...(planId ? { planId } : {}),
    };
    await tx.runEvent.create({ data: { runId, type: "cancelled", bootId: ctx.identity.bootId, data: detail } });
    await writeAudit(tx, actor, { action: "run.cancel", targetType: "run", targetId: runId, companyId: run.company_id, input: { reason, planId }, outcome: "ok", detail });
    return { taken: true as const, marked };
  });
  if (!taken.taken) {
    // Written outside the admission transaction, which had nothing to commit.
    const { refused } = taken;
    await writeAudit(ctx.db, actor, {
      action: "run.cancel",
      targetType: "run",
      targetId: runId,
      companyId: taken.companyId,
      input: { reason, planId },
      outcome: "refused",
      detail: { reason: refused.reason, refusal: refused.refusal },
    });
    return { result: "refused", runId, reason: refused.reason, refusal: refused.refusal };
  }
  // The runners stop (best effort) and the sandboxes go, each under its teardown claim.
  const results = await takeDownLeases(ctx, runId, taken.marked).catch((err: unknown): TeardownOutcome[] =>
    taken.marked.map((l) => ({ outcome: "failed", leaseId: l.id, error: err instanceof Error ? err.message : String(err) })),
  );
  return { result: "cancelled", runId, leases: results.map(describeTeardown) };
}

/** One lease's teardown in words a person and a script both read; what failed stays for the sweep. */
export function describeTeardown(t: TeardownOutcome): { leaseId: string; outcome: string } {
  switch (t.outcome) {
    case "destroyed":
    case "already_gone":
      return { leaseId: t.leaseId, outcome: t.outcome };
    case "not_claimed":
      return { leaseId: t.leaseId, outcome: "pending_cleanup: a sweep holds its teardown claim" };
    case "refused":
      return { leaseId: t.leaseId, outcome: `refused: ${t.reason}` };
    case "failed":
      return { leaseId: t.leaseId, outcome: `pending_cleanup: the teardown failed (${t.error}); the sweep tries again` };
    default:
      return assertNever(t);
  }
}
