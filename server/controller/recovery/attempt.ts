import { databaseNow } from "../../db/clock";
import { EXECUTING_RUN_STATUSES, judgeRecoveryAttempt, type RecoveryAttemptEvidence } from "../../engine";
import { ProviderError } from "../../providers/errors";
import type { ControllerContext } from "../context";
import { fenced, whileCurrent, type RunFence } from "../fence";
import { outageEvidence } from "../outage";
import { finishRunFailed } from "../outcome";
import { appendEvents, json, recordProof } from "../records";

const ACTIVE = EXECUTING_RUN_STATUSES;

/**
 * A recovery (or the execution after it) threw (§2.8): the attempt is counted and judged
 * by the engine (`recovery_attempt` proof). While attempts are left the run is let go with
 * a back-off (`recovery_not_before`), so recovery claims it again later; when they are
 * spent it ends with `native_recovery_attempts_exhausted` and Retry. A run this controller
 * no longer executes is left alone.
 */
export async function countFailedAttempt(ctx: ControllerContext, claimed: RunFence, err: unknown, at?: Date): Promise<void> {
  const boot = ctx.identity.bootId;
  // The back-off is compared with the database's clock by whichever controller claims the run next.
  const now = at ?? (await databaseNow(ctx.db));
  const runId = claimed.id;
  const run = await ctx.db.run.findUnique({ where: { id: runId } });
  // Judged only on the epoch this controller claimed: a fresh read's epoch is whoever holds the run now.
  if (!run || run.executorEpoch !== claimed.executorEpoch || run.executorBootId !== boot || !(ACTIVE as readonly string[]).includes(run.status)) return;
  const message = ProviderError.is(err) ? err.message : err instanceof Error ? err.message : String(err);
  const errors = Array.isArray(run.recoveryErrors) ? run.recoveryErrors.filter((e): e is string => typeof e === "string") : [];
  const evidence: RecoveryAttemptEvidence = {
    kind: "recovery_attempt",
    now: now.toISOString(),
    attempts: run.recoveryAttempts + 1,
    maxAttempts: ctx.config.recoveryMaxAttempts,
    backoffBaseMs: ctx.config.recoveryBackoffMs,
    lastError: message,
    errors,
    // What the error was, and whether the provider is unavailable beyond it (§2.8).
    ...(await outageEvidence(ctx, err)),
    // How long this run has waited on 429s already: a 429 that never ends is counted (§2.8).
    rateLimit: {
      waits: run.rateLimitWaits,
      since: run.rateLimitedSince?.toISOString() ?? null,
      maxWaits: ctx.config.rateLimitMaxWaits,
      maxWaitMs: ctx.config.rateLimitMaxWaitMs,
    },
  };
  const verdict = judgeRecoveryAttempt(evidence);
  if (verdict.verdict === "wait") {
    const rateLimited = evidence.failure?.status === 429;
    // An outage is not the run's failure: not counted, no back-off of its own; it waits where
    // it stands (its status and phase kept) and recovery takes it up once the provider is back.
    await whileCurrent(ctx, run, async (tx) => {
      await recordProof(tx, verdict, evidence, boot, { runId });
      await appendEvents(tx, [{ runId, bootId: boot, type: "provider_wait", data: { error: message, unavailableSince: evidence.provider?.unavailableSince ?? null, notBefore: verdict.notBefore } }]);
      await tx.run.update({
        where: { id: runId },
        data: {
          providerWaitSince: run.providerWaitSince ?? now,
          ...(rateLimited ? { rateLimitWaits: { increment: 1 }, rateLimitedSince: run.rateLimitedSince ?? now } : {}),
          recoveryNotBefore: verdict.notBefore ? new Date(verdict.notBefore) : null,
          executorBootId: null,
          executorEpoch: { increment: 1 },
        },
      });
    });
    return;
  }
  const landing = {
    proofs: [{ verdict, evidence }],
    events: [{ type: "recovery_attempt_failed", data: { attempts: evidence.attempts, verdict: verdict.verdict, error: message, notBefore: verdict.notBefore } }],
  };
  // The last few errors are kept on the run; the proofs keep every one.
  const kept = json([...errors, message].slice(-20));
  if (verdict.verdict === "try_again") {
    // Let go with a back-off: a requeue of its own (epoch + 1), with its proof, or nothing.
    await whileCurrent(ctx, run, async (tx) => {
      for (const p of landing.proofs) await recordProof(tx, p.verdict, p.evidence, boot, { runId });
      await appendEvents(tx, landing.events.map((e) => ({ ...e, runId, bootId: boot })));
      await tx.run.update({
        where: { id: runId },
        data: {
          recoveryAttempts: evidence.attempts,
          recoveryErrors: kept,
          recoveryNotBefore: verdict.notBefore ? new Date(verdict.notBefore) : null,
          executorBootId: null,
          executorEpoch: { increment: 1 },
        },
      });
    });
    return;
  }
  await fenced(ctx, run).update({ where: { id: runId }, data: { recoveryAttempts: evidence.attempts, recoveryErrors: kept } });
  await finishRunFailed(ctx, run, verdict, `recovery failed ${evidence.attempts} times; last: ${message}`, { landing });
}
