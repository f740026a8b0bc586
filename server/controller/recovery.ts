import type { ControllerProcess, EnvironmentLease, Prisma, RestartKind, Run } from "../db/client";
import { EXECUTING_RUN_STATUSES, evaluateBootstrapRestart, type BootstrapRestartEvidence, type LeaseBindingEvidence } from "../engine";
import { ProviderError } from "../providers/errors";
import { PROVIDER_STATE_PATH, RUNNER_ROOT, readRunnerState, type RunnerState } from "../providers/runner";
import { resumeLease } from "./acquire";
import type { ControllerContext } from "./context";
import { REMOTE_CWD } from "./context";
import { activeLease } from "./execute";
import { readRunnerRoot } from "./home";
import { judgeExit } from "./observe";
import { finishRunFailed } from "./outcome";
import { appendEvent, json, recordProof } from "./records";
import { leaseBinding } from "./rules";

const ACTIVE = EXECUTING_RUN_STATUSES;

export const FAILOVER_BACKUP_PATH = `${RUNNER_ROOT}/failover-backup.json`;
export const ROTATION_SNAPSHOT_PATH = `${RUNNER_ROOT}/rotation-snapshot.archived.json`;

export interface ExecutorStatus {
  gone: boolean;
  restartKind: RestartKind;
  reason: string;
  proof?: { evidence: unknown; verdict: ReturnType<typeof judgeExit>["verdict"] };
}

/**
 * Whether the controller that was executing a run is gone: it drained (graceful), the
 * engine proves its process exited, or it stopped heartbeating (another host cannot be
 * probed, so silence is the only evidence there). A live executor keeps its runs.
 */
export function executorStatus(ctx: ControllerContext, executor: ControllerProcess | null, now: Date): ExecutorStatus {
  if (!executor) return { gone: true, restartKind: "hot", reason: "no_executor" };
  if (executor.stoppedAt) {
    return { gone: true, restartKind: executor.stopReason === "drain" ? "graceful" : "hard", reason: `stopped:${executor.stopReason ?? "unknown"}` };
  }
  const record = {
    bootId: executor.bootId,
    pid: executor.pid,
    startedAt: executor.startedAt.toISOString(),
    startTicks: executor.startTicks === null ? null : Number(executor.startTicks),
    pidSpace: executor.pidSpace,
  };
  const judged = judgeExit(ctx, record);
  if (judged.verdict.verdict === "exited") {
    return { gone: true, restartKind: "hard", reason: `exited:${judged.verdict.reason}`, proof: judged };
  }
  if (judged.verdict.verdict === "alive") return { gone: false, restartKind: "hard", reason: `alive:${judged.verdict.reason}` };
  if (now.getTime() - executor.lastSeenAt.getTime() > ctx.config.executorTimeoutMs) {
    return { gone: true, restartKind: "hard", reason: `silent_for_${Math.round((now.getTime() - executor.lastSeenAt.getTime()) / 1000)}s` };
  }
  return { gone: false, restartKind: "hard", reason: `unknown:${judged.verdict.reason}` };
}

/**
 * Interrupted runs of this instance whose executor is gone, claimed for this controller.
 * Pages through active runs by a stable id cursor (§2.8): no number of runs of live
 * executors can hide an interrupted one behind the first page.
 */
export async function claimInterruptedRuns(ctx: ControllerContext, limit: number): Promise<Array<{ run: Run; status: ExecutorStatus }>> {
  const now = new Date();
  const executors = new Map<string, ControllerProcess | null>();
  const claimed: Array<{ run: Run; status: ExecutorStatus }> = [];
  let cursor: string | null = null;
  while (claimed.length < limit) {
    const page: Run[] = await ctx.db.run.findMany({
      where: {
        instanceId: ctx.config.instanceId,
        status: { in: [...ACTIVE] },
        OR: [{ executorBootId: null }, { executorBootId: { not: ctx.identity.bootId } }],
        ...(cursor ? { id: { gt: cursor } } : {}),
      },
      orderBy: { id: "asc" },
      take: ctx.config.pageSize,
    });
    if (page.length === 0) break;
    cursor = page[page.length - 1]!.id;
    const unknown = [...new Set(page.map((r) => r.executorBootId).filter((b): b is string => !!b && !executors.has(b)))];
    if (unknown.length) {
      const found = await ctx.db.controllerProcess.findMany({ where: { bootId: { in: unknown } } });
      for (const b of unknown) executors.set(b, found.find((p) => p.bootId === b) ?? null);
    }
    for (const run of page) {
      if (claimed.length >= limit) break;
      const executor = run.executorBootId ? (executors.get(run.executorBootId) ?? null) : null;
      const status = executorStatus(ctx, executor, now);
      if (!status.gone) continue;
      const { count } = await ctx.db.run.updateMany({
        where: { id: run.id, executorBootId: run.executorBootId, status: { in: [...ACTIVE] } },
        data: { executorBootId: ctx.identity.bootId, restarts: { increment: 1 }, heartbeatAt: now },
      });
      if (count === 1) claimed.push({ run: { ...run, executorBootId: ctx.identity.bootId, restarts: run.restarts + 1 }, status });
    }
  }
  return claimed;
}

/**
 * Decides, with proof, how an interrupted run goes on (DOMAIN.md §2.1, §2.2): returns
 * true when the run may continue (the caller executes it from its phase), false when it
 * was ended.
 */
export async function recoverRun(ctx: ControllerContext, run: Run, status: ExecutorStatus): Promise<boolean> {
  const boot = ctx.identity.bootId;
  if (status.proof) {
    await recordProof(ctx.db, status.proof.verdict, status.proof.evidence, boot, { runId: run.id });
  }
  await appendEvent(ctx.db, run.id, "recovery_started", boot, { restartKind: status.restartKind, executorWas: status.reason, phase: run.phase });

  const lease = await activeLease(ctx, run);
  const phase = run.phase ?? "acquiring";

  if (phase === "acquiring" || (phase === "bootstrapping" && !lease)) {
    // Nothing reached a runner: the bootstrap simply starts again (an intent that may have
    // created a sandbox is reclaimed by the sweep, since its creator is gone).
    const mode = run.turnsDone === 0 ? "bootstrap_retry" : "exact_checkpoint_resume";
    await continueAs(ctx, run, { phase: "acquiring", recoveryMode: mode, recoveryState: null });
    await appendEvent(ctx.db, run.id, "recovery_continues", boot, { mode, why: "no sandbox was bound to a runner yet" });
    return true;
  }
  if (phase === "finishing" || phase === "done") {
    await continueAs(ctx, run, { phase: "finishing", recoveryMode: "exact_checkpoint_resume", recoveryState: null });
    return true;
  }
  if (phase === "session_open" && !lease) {
    if (run.sandboxMode === "per_turn") {
      // Between two per-turn sandboxes: the checkpoint carries the session to the next one.
      await continueAs(ctx, run, { phase: "acquiring", recoveryMode: "exact_checkpoint_resume", recoveryState: null });
      return true;
    }
    await finishRunFailed(ctx, run.id, "native_continuation_requires_reconciliation", "the run had opened its session but holds no sandbox lease", {
      recoveryState: "blocked",
    });
    await ctx.db.run.update({ where: { id: run.id }, data: { recoveryMode: "ambiguous_state" } });
    return false;
  }
  if (!lease?.providerLeaseId) throw new Error(`run ${run.id} in phase ${phase} without a sandbox`);

  const target = run.sandboxMode === "warm" ? await resumeLease(ctx, lease) : lease;
  if (target !== lease) {
    await appendEvent(ctx.db, run.id, "lease_resumed", boot, { leaseId: target.id, previousLeaseId: lease.id, sandboxId: target.providerLeaseId });
  }
  if (phase === "bootstrapping") {
    // The run's own record can lag the sandbox by one step: the runner's durable state
    // says whether it never started, or already opened its session.
    const { state } = await readState(ctx, target.providerLeaseId!);
    const own = state !== null && state.runId === run.id && state.runnerInstanceId === run.runnerInstanceId && state.sessionId === run.sessionId;
    if (state === null && (await runnerProcessState(ctx, target.providerLeaseId!)) === "absent") {
      await continueAs(ctx, run, { phase: "bootstrapping", recoveryMode: "bootstrap_retry", recoveryState: null });
      await appendEvent(ctx.db, run.id, "recovery_continues", boot, { mode: "bootstrap_retry", why: "no runner was ever started on the sandbox" });
      return true;
    }
    if (own && state.lastConnectionProtocolVersion !== null && REATTACHABLE.has(state.lifecycle)) {
      await appendEvent(ctx.db, run.id, "recovery_continues", boot, { why: "the runner had opened its session before the restart" });
      return recoverSession(ctx, run, target, status);
    }
    return recoverBootstrap(ctx, run, target, status);
  }
  return recoverSession(ctx, run, target, status);
}

async function continueAs(
  ctx: ControllerContext,
  run: Run,
  data: Pick<Prisma.RunUpdateInput, "phase" | "recoveryMode" | "recoveryState">,
): Promise<void> {
  await ctx.db.run.update({ where: { id: run.id }, data: { ...data, status: run.status === "suspended" ? "starting" : run.status } });
}

async function readState(ctx: ControllerContext, sandboxId: string): Promise<{ state: RunnerState | null; error: string | null }> {
  try {
    return { state: await readRunnerState(ctx.provider, sandboxId), error: null };
  } catch (err) {
    return { state: null, error: ProviderError.is(err) ? err.message : String(err) };
  }
}

const REATTACHABLE = new Set(["ready", "suspended", "backpressure"]);

async function runnerProcessState(ctx: ControllerContext, sandboxId: string): Promise<string> {
  try {
    return (await ctx.runner.process(sandboxId)).state;
  } catch {
    return "unknown";
  }
}

async function fileExists(ctx: ControllerContext, sandboxId: string, path: string): Promise<boolean> {
  return (await ctx.provider.readFile(sandboxId, path)) !== null;
}

/** §2.2: restart the bootstrap from the sandbox's own runner state, or refuse. */
async function recoverBootstrap(ctx: ControllerContext, run: Run, lease: EnvironmentLease, status: ExecutorStatus): Promise<boolean> {
  const boot = ctx.identity.bootId;
  const sandboxId = lease.providerLeaseId!;
  const runnerInstanceId = run.runnerInstanceId ?? "unknown";
  const sessionId = run.sessionId ?? "unknown";
  const claim = await ctx.db.recoveryClaim.create({
    data: {
      runId: run.id,
      kind: "bootstrap_incomplete",
      providerLeaseId: sandboxId,
      remoteCwd: lease.remoteCwd,
      runnerInstanceId,
      sessionId,
      controllerBootId: boot,
      restartKind: status.restartKind,
    },
  });
  await ctx.db.run.update({ where: { id: run.id }, data: { recoveryState: "bootstrap_incomplete", recoveryMode: "bootstrap_retry" } });
  await appendEvent(ctx.db, run.id, "claim_made", boot, { claimId: claim.id, kind: claim.kind, restartKind: status.restartKind });

  const before = await readState(ctx, sandboxId);
  // Only this run's own runner (by the identity in its state) is stopped before judging.
  let runnerProcess: BootstrapRestartEvidence["runnerProcess"] = "unknown";
  try {
    if (before.state && before.state.runId === run.id && before.state.runnerInstanceId === runnerInstanceId) {
      await ctx.runner.stop(sandboxId);
    }
    const proc = await ctx.runner.process(sandboxId);
    runnerProcess = proc.state;
  } catch (err) {
    ctx.log.warn({ runId: run.id, err: String(err) }, "runner process could not be established");
  }
  const after = await readState(ctx, sandboxId);
  const state = after.state ?? before.state;
  const local = readRunnerRoot(ctx.config.home, ctx.config.instanceId, run.id);
  const localProof = local && local.runnerInstanceId === runnerInstanceId && local.sandboxId === sandboxId ? { recordedAt: new Date().toISOString() } : null;
  if (localProof) await appendEvent(ctx.db, run.id, "local_restart_proof", boot, { recordedAt: localProof.recordedAt, home: ctx.config.home });

  const evidence: BootstrapRestartEvidence = {
    kind: "bootstrap_restart",
    acquisitionOutcome: lease.acquisitionOutcome,
    run: { id: run.id, runnerInstanceId, sessionId },
    claim: { kind: "bootstrap_incomplete", runId: run.id, runnerInstanceId, sessionId },
    localProof,
    runnerState: state
      ? {
          runId: state.runId,
          runnerInstanceId: state.runnerInstanceId,
          sessionId: state.sessionId,
          // The state as it was before this controller stopped the runner.
          lifecycle: before.state?.lifecycle ?? state.lifecycle,
          lastConnectionProtocolVersion: state.lastConnectionProtocolVersion,
          lastControllerCommandSeq: state.lastControllerCommandSeq,
          reconnectCount: state.reconnectCount,
          outbox: state.outbox,
          processedCommands: state.processedCommands,
          pendingTerminalDelivery: state.pendingTerminalDelivery,
        }
      : null,
    providerStatePresent: state?.providerStatePresent === true || (await fileExists(ctx, sandboxId, PROVIDER_STATE_PATH)),
    failoverBackup: await fileExists(ctx, sandboxId, FAILOVER_BACKUP_PATH),
    archivedRotationSnapshot: await fileExists(ctx, sandboxId, ROTATION_SNAPSHOT_PATH),
    runnerProcess,
  };
  const verdict = evaluateBootstrapRestart(evidence);
  await recordProof(ctx.db, verdict, evidence, boot, { runId: run.id, claimId: claim.id, leaseId: lease.id, sandboxId });
  await ctx.db.recoveryClaim.update({ where: { id: claim.id }, data: { disposition: verdict.verdict, decidedAt: new Date() } });
  if (state) await ctx.db.run.update({ where: { id: run.id }, data: { lastRunnerState: json(state), lastRunnerStateAt: new Date() } });

  if (verdict.verdict === "restart_bootstrap") {
    await continueAs(ctx, run, { phase: "bootstrapping", recoveryMode: "bootstrap_retry", recoveryState: null });
    await appendEvent(ctx.db, run.id, "bootstrap_restart", boot, { claimId: claim.id, proofSource: (verdict as { proofSource?: string }).proofSource ?? null });
    return true;
  }
  await finishRunFailed(ctx, run.id, verdict.code ?? "native_restart_recovery_blocked", `bootstrap restart refused: ${failedChecks(verdict.checks)}`, {
    recoveryState: "blocked",
  });
  return false;
}

/** §2.1: reattach to the surviving runner on the claimed lease, or refuse. */
async function recoverSession(ctx: ControllerContext, run: Run, lease: EnvironmentLease, status: ExecutorStatus): Promise<boolean> {
  const boot = ctx.identity.bootId;
  const sandboxId = lease.providerLeaseId!;
  const staged = run.sandboxMode === "per_turn";
  const checkpoint = (run.checkpoint ?? {}) as { providerLeaseId?: string | null; remoteCwd?: string | null };
  // The claim names what the run's own checkpoint names, and nothing else (§2.1): filling a
  // gap from the target would make the binding compare a value with itself.
  const claimed = { providerLeaseId: checkpoint.providerLeaseId ?? null, remoteCwd: checkpoint.remoteCwd ?? null };
  const claim = await ctx.db.recoveryClaim.create({
    data: {
      runId: run.id,
      kind: staged ? "staged_attachment" : "reattach_remote_runner",
      providerLeaseId: claimed.providerLeaseId,
      remoteCwd: claimed.remoteCwd,
      runnerInstanceId: run.runnerInstanceId,
      sessionId: run.sessionId,
      controllerBootId: boot,
      restartKind: status.restartKind,
    },
  });
  await ctx.db.run.update({ where: { id: run.id }, data: { recoveryState: "awaiting_runner_reattach", recoveryMode: "exact_checkpoint_resume" } });
  await appendEvent(ctx.db, run.id, "claim_made", boot, { claimId: claim.id, kind: claim.kind, restartKind: status.restartKind });

  const { state } = await readState(ctx, sandboxId);
  const evidence: LeaseBindingEvidence = {
    kind: "lease_binding",
    path: staged ? "staged_attachment" : "remote_reattach",
    claim: { runId: run.id, remote: claimed },
    target: { runId: lease.runId ?? run.id, providerLeaseId: sandboxId, remoteCwd: lease.remoteCwd ?? REMOTE_CWD, acquisitionOutcome: lease.acquisitionOutcome },
    staged: staged
      ? {
          headerReadable: state !== null,
          sourceRunMatches: state?.runId === run.id,
          runnerIdentityMatches: state?.runnerInstanceId === run.runnerInstanceId,
        }
      : null,
  };
  const verdict = leaseBinding(ctx.config, evidence);
  await recordProof(ctx.db, verdict, evidence, boot, { runId: run.id, claimId: claim.id, leaseId: lease.id, sandboxId });
  await ctx.db.recoveryClaim.update({ where: { id: claim.id }, data: { disposition: verdict.verdict, decidedAt: new Date() } });

  if (verdict.verdict !== "admitted") {
    // The run rests where the verdict says (§2.1): its continuation code; the refusal code stays on the proof.
    const restsIn = (verdict.kind === "lease_binding" ? verdict.continuation?.code : null) ?? "native_continuation_requires_reconciliation";
    await appendEvent(ctx.db, run.id, "continuation_blocked", boot, { code: verdict.code, restsIn });
    await finishRunFailed(ctx, run.id, restsIn, `reattach refused (${verdict.code ?? "refused"}): ${failedChecks(verdict.checks)}`, {
      recoveryState: "blocked",
    });
    return false;
  }
  try {
    const reattached = await ctx.runner.reattach(sandboxId);
    await ctx.db.run.update({
      where: { id: run.id },
      data: {
        status: "running",
        phase: "session_open",
        recoveryState: null,
        lastRunnerState: json(reattached),
        lastRunnerStateAt: new Date(),
        checkpoint: json({ ...checkpoint, turn: run.turnsDone, sessionId: run.sessionId, leaseId: lease.id, providerLeaseId: sandboxId, remoteCwd: lease.remoteCwd, at: new Date().toISOString() }),
      },
    });
    await appendEvent(ctx.db, run.id, "runner_reattached", boot, { sandboxId, reconnectCount: reattached.reconnectCount });
    return true;
  } catch (err) {
    const message = ProviderError.is(err) ? err.message : String(err);
    await finishRunFailed(ctx, run.id, "native_continuation_requires_reconciliation", `the lease was proven but the runner could not be reattached: ${message}`, {
      recoveryState: "blocked",
    });
    return false;
  }
}

function failedChecks(checks: ReadonlyArray<{ name: string; ok: boolean }>): string {
  const failed = checks.filter((c) => !c.ok).map((c) => c.name);
  return failed.length ? failed.join(", ") : "no check passed";
}
