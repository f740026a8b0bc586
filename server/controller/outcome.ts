import type { Run } from "../db/client";
import { classifyStartupFailure, restingFailure, type StartupFailureEvidence, type Verdict } from "../engine";
import type { ProviderFailure } from "../providers/runner";
import type { ControllerContext } from "./context";
import { removeRunnerRoot } from "./home";
import { appendEvent, recordProof } from "./records";
import { assertCurrent, fenced, type RunFence } from "./fence";
import { releaseRunLeases } from "./teardown";

/**
 * How a run ends: from the verdict that ended it (issue 12 item 10). Code, owner, Retry and
 * next action are where the verdict rests (`restingFailure`), so the run row never
 * contradicts its proof; no caller names a code.
 */
export async function finishRunFailed(ctx: ControllerContext, run: RunFence, verdict: Verdict, detail: string, extra: { recoveryState?: "blocked" | null } = {}) {
  const runId = run.id;
  const rest = restingFailure(verdict);
  if (!rest) throw new Error(`run ${runId}: a ${verdict.kind} verdict "${verdict.verdict}" does not end a run`);
  // Fenced (§2.10): a controller that lost the run writes nothing and releases nothing.
  await fenced(ctx, run).update({
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
      retryAt: null,
      recoveryNotBefore: null,
      phase: "done",
      finishedAt: new Date(),
      executorBootId: null,
    },
  });
  await appendEvent(ctx.db, runId, "run_failed", ctx.identity.bootId, { code: rest.code, proof: verdict.kind, detail });
  await stopRunnersQuietly(ctx, runId);
  await releaseRunLeases(ctx, runId);
  removeRunnerRoot(ctx.config.home, ctx.config.instanceId, runId);
}

export async function finishRunSucceeded(ctx: ControllerContext, run: RunFence) {
  const runId = run.id;
  // Sandboxes go first, so a succeeded run never still holds one (a crash in between
  // leaves the run in `finishing`, which recovery completes) — once the epoch is proven ours.
  await assertCurrent(ctx, run);
  await stopRunnersQuietly(ctx, runId);
  await releaseRunLeases(ctx, runId);
  await fenced(ctx, run).update({
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
    },
  });
  await appendEvent(ctx.db, runId, "run_succeeded", ctx.identity.bootId);
  removeRunnerRoot(ctx.config.home, ctx.config.instanceId, runId);
}

/** Stops the runner on each sandbox the run still holds; a runner already gone is fine. */
export async function stopRunnersQuietly(ctx: ControllerContext, runId: string) {
  const leases = await ctx.db.environmentLease.findMany({ where: { runId, status: "active" } });
  for (const lease of leases) {
    if (!lease.providerLeaseId) continue;
    await ctx.runner.stop(lease.providerLeaseId).catch((err: unknown) => {
      ctx.log.debug({ runId, err: String(err) }, "runner stop failed (ignored)");
    });
  }
}

export interface StartupFailure {
  definite: boolean;
  providerFailure: ProviderFailure | null;
  message: string;
  /** The runner could not bind its ingress port (retryable under its own code). */
  bindConflict?: boolean;
}

/**
 * A failed start (DOMAIN.md §2.3): the engine classifies it, the proof is stored, the
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
  };
  const verdict = classifyStartupFailure(evidence, { retryAfterSeconds: ctx.config.retryDelayMs / 1000 });
  await recordProof(ctx.db, verdict, evidence, ctx.identity.bootId, { runId: run.id });
  await appendEvent(ctx.db, run.id, "startup_failed", ctx.identity.bootId, { attempt, verdict: verdict.verdict, code: verdict.code, message: failure.message });

  if (verdict.verdict === "retryable_failure") {
    await assertCurrent(ctx, run);
    await stopRunnersQuietly(ctx, run.id);
    await releaseRunLeases(ctx, run.id);
    const retryAt = new Date(Date.now() + ctx.config.retryDelayMs);
    await fenced(ctx, run).update({
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
      },
    });
    await appendEvent(ctx.db, run.id, "retry_scheduled", ctx.identity.bootId, { attempt, retryAt: retryAt.toISOString(), code: verdict.code });
    return;
  }
  await fenced(ctx, run).update({ where: { id: run.id }, data: { providerAttempts: attempt } });
  await finishRunFailed(ctx, run, verdict, failure.message);
}
