import type { Run } from "../db/client";
import { classifyStartupFailure, describeFailure, type StartupFailureEvidence } from "../engine";
import type { ProviderFailure } from "../providers/runner";
import type { ControllerContext } from "./context";
import { removeRunnerRoot } from "./home";
import { appendEvent, recordProof } from "./records";
import { releaseRunLeases } from "./teardown";

/** How a run ends: the catalogue decides outcome, owner, Retry and the sentence. */
export async function finishRunFailed(ctx: ControllerContext, runId: string, code: string, detail: string, extra: { recoveryState?: "blocked" | null } = {}) {
  const entry = describeFailure(code);
  await ctx.db.run.update({
    where: { id: runId },
    data: {
      status: "failed",
      outcome: entry?.outcome ?? "terminal_failure",
      failureCode: code,
      failureDetail: detail,
      owner: entry?.owner ?? "board",
      canRetry: entry?.canRetry ?? false,
      nextAction: entry?.nextAction ?? null,
      recoveryState: extra.recoveryState ?? null,
      retryAt: null,
      phase: "done",
      finishedAt: new Date(),
      executorBootId: null,
    },
  });
  await appendEvent(ctx.db, runId, "run_failed", ctx.identity.bootId, { code, detail });
  await stopRunnersQuietly(ctx, runId);
  await releaseRunLeases(ctx, runId);
  removeRunnerRoot(ctx.config.home, ctx.config.instanceId, runId);
}

export async function finishRunSucceeded(ctx: ControllerContext, runId: string) {
  // Sandboxes go first, so a succeeded run never still holds one (a crash in between
  // leaves the run in `finishing`, which recovery completes).
  await stopRunnersQuietly(ctx, runId);
  await releaseRunLeases(ctx, runId);
  await ctx.db.run.update({
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
  };
  const verdict = classifyStartupFailure(evidence, { retryAfterSeconds: ctx.config.retryDelayMs / 1000 });
  await recordProof(ctx.db, verdict, evidence, ctx.identity.bootId, { runId: run.id });
  await appendEvent(ctx.db, run.id, "startup_failed", ctx.identity.bootId, { attempt, verdict: verdict.verdict, code: verdict.code, message: failure.message });

  if (verdict.verdict === "retryable_failure") {
    const code = failure.bindConflict ? "runner_ingress_bind_conflict" : (verdict.code ?? "native_session_interrupted");
    const entry = describeFailure(code);
    await stopRunnersQuietly(ctx, run.id);
    await releaseRunLeases(ctx, run.id);
    const retryAt = new Date(Date.now() + ctx.config.retryDelayMs);
    await ctx.db.run.update({
      where: { id: run.id },
      data: {
        status: "queued",
        outcome: "retryable_failure",
        failureCode: code,
        failureDetail: failure.message,
        owner: "agent",
        canRetry: false,
        nextAction: entry?.nextAction ?? null,
        providerAttempts: attempt,
        retryAt,
        phase: null,
        recoveryMode: "bootstrap_retry",
        recoveryState: null,
        executorBootId: null,
      },
    });
    await appendEvent(ctx.db, run.id, "retry_scheduled", ctx.identity.bootId, { attempt, retryAt: retryAt.toISOString(), code });
    return;
  }
  await ctx.db.run.update({ where: { id: run.id }, data: { providerAttempts: attempt } });
  await finishRunFailed(ctx, run.id, verdict.code ?? "native_session_retry_exhausted", failure.message);
}
