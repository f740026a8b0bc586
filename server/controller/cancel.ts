import crypto from "node:crypto";
import { z } from "zod";
import { emitRunEnded } from "../alerts/events";
import { writeAudit, type Actor } from "../audit/write";
import { databaseNow } from "../db/clock";
import type { EnvironmentLease, Prisma } from "../db/client";
import { admitCancel, assertNever } from "../engine";
import { AppError } from "../errors";
import { isUuid } from "../lib/ids";
import { CANCEL_REASON_MAX } from "../shared/limits";
import { inScope, type CompanyScope } from "../shared/roles";
import type { ControllerContext } from "./context";
import { claimFields, teardownLease, type TeardownOutcome } from "./teardown";

/**
 * What one Cancel did (docs/rules.md §2.11): the run cancelled with each lease's teardown, or
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
 * Cancel (docs/rules.md §2.11). One transaction under the run's row lock judges the run with
 * `admitCancel` and, when admitted, takes it over by compare-and-set on its executor epoch
 * (§2.10: epoch + 1, so whatever its executor writes next matches nothing), rests it in
 * `cancelled` with who and why, appends the `cancelled` event, takes its active leases out
 * of service, writes the audit entry and the `run.cancelled` alert (docs/alerts.md). Two
 * cancels of one run (two tabs, a bulk plan and a person) queue on the lock: the second reads
 * `cancelled` and is refused. After the commit
 * the runners are stopped and the sandboxes torn down by the teardown machinery (the claim
 * and fence the transaction took, the `sandbox_ownership` proof); a teardown that fails
 * leaves its lease `pending_cleanup` for the sweep, and the outcome says so.
 */
export async function cancelRun(ctx: ControllerContext, scope: CompanyScope, actor: Actor, runId: string, options: CancelOptions = {}): Promise<CancelOutcome> {
  const taken = await ctx.db.$transaction((tx) => cancelInTransaction(ctx, tx, scope, actor, runId, options));
  if (taken.result === "refused") return taken;
  return { result: "cancelled", runId, leases: (await taken.tearDown()).map(({ leaseId, outcome }) => ({ leaseId, outcome })) };
}

/** One lease's teardown after a Cancel, in words (`describeTeardown`); `done`: the sandbox is gone. */
export type LeaseTeardown = { leaseId: string; outcome: string; done: boolean };

/**
 * A Cancel carried out in the caller's transaction (a bulk plan's item records its result in
 * the same one): the run is cancelled when `tx` commits. `tearDown` stops the runners and tears
 * the sandboxes down on the claim `tx` took; call it only after the commit, outside any
 * transaction, since it waits for the provider.
 */
export type CancelTaken =
  | Extract<CancelOutcome, { result: "refused" }>
  | { result: "cancelled"; runId: string; leases: string[]; tearDown(): Promise<LeaseTeardown[]> };

export async function cancelInTransaction(ctx: ControllerContext, tx: Prisma.TransactionClient, scope: CompanyScope, actor: Actor, runId: string, options: CancelOptions = {}): Promise<CancelTaken> {
  const reason = options.reason?.trim().slice(0, CANCEL_REASON_MAX) || null;
  const planId = options.planId ?? null;
  // A malformed id names no run (a caller that skipped the input schema gets NOT_FOUND, not a database error).
  if (!isUuid(runId)) throw new AppError("NOT_FOUND", `run ${runId} does not exist`);
  const [run] = await tx.$queryRaw<LockedRun[]>`
    SELECT id::text, company_id, status::text, executor_epoch, executor_boot_id, phase, cancelled_by, cancel_reason
    FROM runs WHERE id = ${runId}::uuid FOR UPDATE`;
  // Another company's run reads exactly like one that does not exist (no id guessing).
  if (!run || !inScope(scope, run.company_id)) throw new AppError("NOT_FOUND", `run ${runId} does not exist`);
  const admission = admitCancel({ run: { status: run.status, cancelledBy: run.cancelled_by, cancelReason: run.cancel_reason } });
  if (admission.verdict === "refused") {
    await writeAudit(tx, actor, {
      action: "run.cancel",
      targetType: "run",
      targetId: runId,
      companyId: run.company_id,
      input: { reason, planId },
      outcome: "refused",
      detail: { reason: admission.reason, refusal: admission.refusal },
    });
    return { result: "refused", runId, reason: admission.reason, refusal: admission.refusal };
  }
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
  // Out of service and claimed for this cancel's teardown in the same transaction (as an
  // operator's reclaim does, §2.6): no sweep takes a lease in between, so the answer says
  // what became of each sandbox.
  const now = await databaseNow(tx);
  const active = await tx.environmentLease.findMany({ where: { runId, status: "active" }, select: { id: true } });
  const marked: ClaimedLeaseRow[] = [];
  for (const { id } of active) {
    const attemptId = crypto.randomUUID();
    const lease = await tx.environmentLease.update({
      where: { id },
      data: { status: "pending_cleanup", cleanupStatus: "cancel", nextCleanupAt: null, ...claimFields(ctx, attemptId, now) },
    });
    marked.push({ attemptId, lease });
  }
  const detail = {
    by: actor.id,
    reason,
    epoch,
    previousEpoch: run.executor_epoch,
    wasStatus: run.status,
    phase: run.phase,
    executorWas: run.executor_boot_id,
    leases: marked.map((m) => m.lease.id),
    ...(planId ? { planId } : {}),
  };
  await tx.runEvent.create({ data: { runId, type: "cancelled", bootId: ctx.identity.bootId, data: detail } });
  await writeAudit(tx, actor, { action: "run.cancel", targetType: "run", targetId: runId, companyId: run.company_id, input: { reason, planId }, outcome: "ok", detail });
  // run.cancelled (opt-in) in the transaction that cancels, so a bulk plan's item carries it too (runs/bulk-confirm.ts).
  await emitRunEnded(tx, await tx.run.findUniqueOrThrow({ where: { id: runId } }));
  return {
    result: "cancelled",
    runId,
    leases: detail.leases,
    tearDown: async () => (await takeDown(ctx, runId, marked)).map((t) => ({ ...describeTeardown(t), done: t.outcome === "destroyed" || t.outcome === "already_gone" })),
  };
}

type ClaimedLeaseRow = { attemptId: string; lease: EnvironmentLease };

/**
 * After the takeover committed: each runner is stopped (best effort: its agent's turn is
 * killed where it stands; a runner already gone is fine), then each sandbox is torn down on
 * the claim the takeover made — the `sandbox_ownership` proof first, a receipt after.
 */
async function takeDown(ctx: ControllerContext, runId: string, claimed: readonly ClaimedLeaseRow[]): Promise<TeardownOutcome[]> {
  for (const { lease } of claimed) {
    if (!lease.providerLeaseId) continue;
    await ctx.runner.stop(lease.providerLeaseId).catch((err: unknown) => ctx.log.debug({ runId, err: String(err) }, "runner stop failed (ignored)"));
  }
  const results: TeardownOutcome[] = [];
  for (const { attemptId, lease } of claimed) {
    results.push(
      await teardownLease(ctx, lease.id, { attemptId, lease }).catch((err: unknown): TeardownOutcome => ({ outcome: "failed", leaseId: lease.id, error: err instanceof Error ? err.message : String(err) })),
    );
  }
  return results;
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
