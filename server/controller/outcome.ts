import { emitRunEnded } from "../alerts/events";
import { databaseNow } from "../db/clock";
import type { Prisma, RecoveryMode, RestartKind, Run } from "../db/client";
import { judgeStartupFailure, restingFailure, type ClaimDraft, type StartupFailureEvidence, type Verdict } from "../engine";
import type { ProviderFailure } from "../providers/runner";
import type { ControllerContext } from "./context";
import { removeRunnerRoot } from "./home";
import { appendEvent, appendEvents, recordProof, type ProofLinks, type RunEventInput } from "./records";
import { fenced, whileCurrent, type RunFence } from "./fence";
import { markRunLeases, takeDownLeases } from "./teardown";

/** What lands with a run's ending, in the same transaction as its fenced write (§2.10): a controller that lost the run records none of it. */
export interface Landing {
  /** `claim`: the recovery claim the proof decides, made with it (its disposition the verdict). */
  proofs?: ReadonlyArray<{ verdict: Verdict; evidence: unknown; links?: ProofLinks; claim?: { draft: ClaimDraft; restartKind: RestartKind } }>;
  events?: ReadonlyArray<Omit<RunEventInput, "runId" | "bootId">>;
}

/**
 * How a run ends: from the verdict that ended it (docs/rules.md §3). Code, owner, Retry and
 * next action are where the verdict rests (`restingFailure`), so the run row never
 * contradicts its proof; no caller names a code. The ending is a takeover of its own (epoch
 * + 1): whatever a stale executor still tries on the run matches nothing.
 */
export async function finishRunFailed(
  ctx: ControllerContext,
  run: RunFence,
  verdict: Verdict,
  detail: string,
  extra: { recoveryState?: "blocked" | null; recoveryMode?: RecoveryMode; landing?: Landing } = {},
) {
  const runId = run.id;
  const rest = restingFailure(verdict);
  if (!rest) throw new Error(`run ${runId}: a ${verdict.kind} verdict "${verdict.verdict}" does not end a run`);
  // Fenced (§2.10): a controller that lost the run writes nothing, records nothing and releases nothing.
  const marked = await whileCurrent(ctx, run, async (tx) => {
    await land(ctx, tx, runId, extra.landing);
    const failed = await tx.run.update({
      where: { id: runId },
      data: {
        status: "failed",
        outcome: "terminal_failure",
        failureCode: rest.code,
        failureDetail: detail,
        owner: rest.owner,
        canRetry: rest.canRetry,
        nextAction: rest.nextAction,
        recoveryState: extra.recoveryState ?? null,
        ...(extra.recoveryMode !== undefined ? { recoveryMode: extra.recoveryMode } : {}),
        retryAt: null,
        recoveryNotBefore: null,
        phase: "done",
        finishedAt: new Date(),
        executorBootId: null,
        executorEpoch: { increment: 1 },
      },
    });
    await appendEvent(tx, runId, "run_failed", ctx.identity.bootId, { code: rest.code, proof: verdict.kind, detail });
    // The alert lands with the failure it reports, or not at all (a lost run writes neither).
    await emitRunEnded(tx, failed, { recoveryExhausted: verdict.kind === "recovery_attempt" });
    return markRunLeases(tx, runId);
  });
  await takeDownLeases(ctx, runId, marked);
  removeRunnerRoot(ctx.config.home, ctx.config.instanceId, runId);
}

export async function finishRunSucceeded(ctx: ControllerContext, run: RunFence) {
  const runId = run.id;
  // Sandboxes go first, so a succeeded run never still holds one (a crash in between leaves
  // the run in `finishing`, which recovery completes). They are taken out of service in the
  // transaction that proves the epoch ours: a newer executor never has its runner stopped.
  const marked = await whileCurrent(ctx, run, (tx) => markRunLeases(tx, runId));
  await takeDownLeases(ctx, runId, marked);
  await whileCurrent(ctx, run, async (tx) => {
    const succeeded = await tx.run.update({
      where: { id: runId },
      data: {
        status: "succeeded",
        outcome: null,
        failureCode: null,
        failureDetail: null,
        owner: "agent",
        canRetry: false,
        nextAction: null,
        recoveryState: null,
        phase: "done",
        finishedAt: new Date(),
        executorBootId: null,
        executorEpoch: { increment: 1 },
      },
    });
    await appendEvent(tx, runId, "run_succeeded", ctx.identity.bootId);
    // run.succeeded (opt-in) lands with the ending it reports, or not at all, as run.failed does.
    await emitRunEnded(tx, succeeded);
  });
  removeRunnerRoot(ctx.config.home, ctx.config.instanceId, runId);
}

/** Writes a landing's claims, proofs and events inside the caller's fenced transaction; the claims' ids by kind. */
export async function land(ctx: ControllerContext, tx: Prisma.TransactionClient, runId: string, landing: Landing | undefined): Promise<Map<string, string>> {
  const claims = new Map<string, string>();
  for (const p of landing?.proofs ?? []) {
    let claimId: string | null = null;
    if (p.claim) {
      const { draft, restartKind } = p.claim;
      const made = await tx.recoveryClaim.create({
        data: { runId, ...draft, controllerBootId: ctx.identity.bootId, restartKind, disposition: p.verdict.verdict, decidedAt: new Date() },
      });
      claimId = made.id;
      claims.set(draft.kind, made.id);
    }
    await recordProof(tx, p.verdict, p.evidence, ctx.identity.bootId, { runId, ...p.links, ...(claimId ? { claimId } : {}) });
  }
  await appendEvents(
    tx,
    (landing?.events ?? []).map((e) => ({ ...e, runId, bootId: ctx.identity.bootId })),
  );
  return claims;
}

export interface StartupFailure {
  definite: boolean;
  providerFailure: ProviderFailure | null;
  message: string;
  /** The runner could not bind its ingress port (retryable under its own code). */
  bindConflict?: boolean;
  /** The sandbox could not run the runner at all (no node), and the snapshot it was made from. */
  runnerMissing?: StartupFailureEvidence["runnerMissing"];
}

/**
 * A failed start (docs/rules.md §2.3): the engine classifies it, the proof is stored, the
 * sandbox is released, and the run is either scheduled again (same run, after the delay)
 * or ended with the catalogue's code and Retry.
 */
export async function handleStartupFailure(ctx: ControllerContext, run: Run, failure: StartupFailure) {
  const attempt = run.providerAttempts + 1;
  const evidence: StartupFailureEvidence = {
    kind: "startup_failure",
    target: run.target,
    phase: "session.open",
    definite: failure.definite,
    providerFailure: failure.providerFailure,
    attempt,
    maxAttempts: run.maxProviderAttempts,
    bindConflict: failure.bindConflict === true,
    ...(failure.runnerMissing ? { runnerMissing: failure.runnerMissing } : {}),
  };
  const verdict = judgeStartupFailure(evidence, { retryAfterSeconds: ctx.config.retryDelayMs / 1000 });
  // The proof and its event land only with the fenced write they explain (§2.10).
  const landing: Landing = {
    proofs: [{ verdict, evidence }],
    events: [{ type: "startup_failed", data: { attempt, verdict: verdict.verdict, code: verdict.code, message: failure.message } }],
  };

  if (verdict.verdict === "retryable_failure") {
    // Compared with the database's now() by the claim that takes it up.
    const retryAt = new Date((await databaseNow(ctx.db)).getTime() + ctx.config.retryDelayMs);
    // A requeue is a takeover too (epoch + 1): the next claim starts from a fence no stale
    // executor holds.
    const marked = await whileCurrent(ctx, run, async (tx) => {
      await land(ctx, tx, run.id, landing);
      await tx.run.update({
        where: { id: run.id },
        data: {
          status: "queued",
          outcome: verdict.outcome,
          failureCode: verdict.code,
          failureDetail: failure.message,
          owner: verdict.owner,
          canRetry: verdict.canRetry,
          nextAction: verdict.nextAction,
          providerAttempts: attempt,
          retryAt,
          phase: null,
          recoveryMode: "bootstrap_retry",
          recoveryState: null,
          executorBootId: null,
          executorEpoch: { increment: 1 },
        },
      });
      await appendEvent(tx, run.id, "retry_scheduled", ctx.identity.bootId, { attempt, retryAt: retryAt.toISOString(), code: verdict.code });
      return markRunLeases(tx, run.id);
    });
    await takeDownLeases(ctx, run.id, marked);
    return;
  }
  await fenced(ctx, run).update({ where: { id: run.id }, data: { providerAttempts: attempt } });
  await finishRunFailed(ctx, run, verdict, failure.message, { landing });
}
