import { evaluateBootstrapRestart, runnerStateEvidence } from "./bootstrap-restart";
import type { Owner } from "./catalogue";
import { evaluateLeaseBinding } from "./lease-binding";
import { judgeRecoveryAttempt } from "./recovery-attempt";
import { routeRecovery } from "./recovery-route";
import { restingFailure } from "./resting-code";
import { decideRunnerResume } from "./runner-resume";
import {
  RUN_PHASES,
  RUNNER_LIFECYCLES,
  type BootstrapRestartEvidence,
  type LeaseBindingEvidence,
  type RecoveryAttemptEvidence,
  type RecoveryRouteEvidence,
  type RunnerResumeEvidence,
  type StoppedSandboxEvidence,
} from "./schemas";
import { decideStoppedSandbox } from "./stopped-sandbox";
import type { Check, Verdict } from "./verdicts";

/**
 * The restart forecast (docs/rules.md §2.12) as a pure function: the evidence a controller
 * restarted now would gather for one run, walked through the SAME engine functions recovery
 * (`controller/recovery.ts` `recoverRun`) calls, in the same order — `routeRecovery`,
 * `decideStoppedSandbox`, `routeRecovery` again on the runner, then `evaluateBootstrapRestart`
 * or `evaluateLeaseBinding` and `decideRunnerResume`; a read that failed goes to
 * `judgeRecoveryAttempt` as recovery's `countFailedAttempt` would. The hypothesis: the run's
 * executor is gone, the sandbox and its runner are as read.
 *
 * Readings are asked for, not assumed: when the walk needs one it was not given, the answer
 * is `{ need }` and the shell reads it (read-only) and calls again — as recovery reads the
 * runner only when the route says `read_runner`.
 */

export const FORECAST_NEEDS = ["sandbox", "runner", "files"] as const;
export type ForecastNeed = (typeof FORECAST_NEEDS)[number];

/** A read that threw: what recovery's `countFailedAttempt` would judge (the `recovery_attempt` evidence's error fields). */
export interface ForecastReadError {
  message: string;
  failure?: RecoveryAttemptEvidence["failure"];
  provider?: RecoveryAttemptEvidence["provider"];
}

/** The runner's durable state as read (runner-state.json), the fields the proofs take. */
export interface ForecastRunnerState {
  runId: string;
  runnerInstanceId: string;
  sessionId: string;
  lifecycle: (typeof RUNNER_LIFECYCLES)[number];
  lastConnectionProtocolVersion: number | string | null;
  lastControllerCommandSeq: number;
  reconnectCount: number;
  outbox: unknown[];
  processedCommands: unknown[];
  pendingTerminalDelivery: unknown;
  providerStatePresent: boolean;
  /** The seq of the turn in flight, or null. */
  inFlightSeq: number | null;
  /** The highest processed seq; null none; undefined: a record could not be read (recovery's `lastProcessedSeq`). */
  lastProcessedSeq: number | null | undefined;
  workDir: string | null;
  programDigest: string | null;
}

export type RunnerProcessReading = "running" | "stopped" | "absent" | "unknown";

export interface ForecastEvidence {
  now: string;
  run: {
    id: string;
    status: string;
    phase: string | null;
    sandboxMode: "warm" | "per_turn";
    turnsDone: number;
    runnerInstanceId: string | null;
    sessionId: string | null;
    /** The run's checkpoint: what a §2.1 claim names (never filled from the target). */
    checkpoint: { providerLeaseId: string | null; remoteCwd: string | null };
    recoveryAttempts: number;
    recoveryErrors: string[];
  };
  limits: { recoveryMaxAttempts: number; recoveryBackoffMs: number; maxSandboxStartAttempts: number };
  /** The run's active lease with a provider sandbox id (recovery's `bound`), or null. */
  lease: { id: string; runId: string | null; providerLeaseId: string; acquisitionOutcome: "created" | "resumed" | "replacement" } | null;
  /** The provider's `get` of the lease's sandbox, and the start attempts already counted on it. */
  sandbox?: { ok: true; state: string | null; desiredState: string | null; startAttempts: number } | { ok: false; error: ForecastReadError };
  /** runner-state.json (null: none) and the runner process, read without changing either. */
  runner?: { ok: true; state: ForecastRunnerState | null; process: RunnerProcessReading } | { ok: false; error: ForecastReadError };
  /** §2.2's files beside the state, and the local restart proof from this controller's home. */
  files?:
    | { ok: true; providerStatePresent: boolean; failoverBackup: boolean; archivedRotationSnapshot: boolean; localProof: { recordedAt: string } | null }
    | { ok: false; error: ForecastReadError };
  /** sha of the runner program this code would run (the staged template digest, §2.1). */
  runnerProgramDigest: string;
}

export type ForecastPath =
  | "acquire_again"
  | "finish"
  | "next_turn_sandbox"
  | "bootstrap_fresh"
  | "bootstrap_restart"
  | "reattach"
  | "resume"
  | "start_sandbox"
  | "wait_for_sandbox"
  | "wait_for_provider";

export interface ForecastStep {
  verdict: Verdict;
  evidence: unknown;
}

export interface ForecastOutcome {
  prediction: "continues" | "ends" | "operator";
  path: ForecastPath | null;
  code: string | null;
  restsIn: string | null;
  owner: Owner | null;
  canRetry: boolean | null;
  reason: string;
  steps: ForecastStep[];
  readError: string | null;
}

export type ForecastAnswer = { need: ForecastNeed } | ForecastOutcome;

/** The engine functions the walk calls; the controller hands in its own lease binding (its test-only break rule). */
export interface ForecastRules {
  leaseBinding: (e: LeaseBindingEvidence) => Verdict;
}

const DEFAULT_RULES: ForecastRules = { leaseBinding: evaluateLeaseBinding };

export function forecastRecovery(e: ForecastEvidence, rules: ForecastRules = DEFAULT_RULES): ForecastAnswer {
  const steps: ForecastStep[] = [];
  const judge = <V extends Verdict>(verdict: V, evidence: unknown): V => {
    steps.push({ verdict, evidence });
    return verdict;
  };
  const continues = (path: ForecastPath, reason: string): ForecastOutcome => ({ prediction: "continues", path, code: null, restsIn: null, owner: null, canRetry: null, reason, steps, readError: null });
  const ends = (verdict: Verdict, reason: string, readError: string | null = null): ForecastOutcome => {
    const rest = restingFailure(verdict);
    return { prediction: "ends", path: null, code: verdict.code, restsIn: rest?.code ?? null, owner: rest?.owner ?? null, canRetry: rest?.canRetry ?? null, reason, steps, readError };
  };
  /** A recovery that throws is counted and judged (§2.8, `countFailedAttempt`). */
  const attempt = (error: ForecastReadError, what: string): ForecastOutcome => {
    const evidence: RecoveryAttemptEvidence = {
      kind: "recovery_attempt",
      now: e.now,
      attempts: e.run.recoveryAttempts + 1,
      maxAttempts: e.limits.recoveryMaxAttempts,
      backoffBaseMs: e.limits.recoveryBackoffMs,
      lastError: error.message,
      errors: e.run.recoveryErrors,
      ...(error.failure ? { failure: error.failure } : {}),
      ...(error.provider ? { provider: error.provider } : {}),
    };
    const v = judge(judgeRecoveryAttempt(evidence), evidence);
    switch (v.verdict) {
      case "wait":
        return { ...continues("wait_for_provider", `The provider is unavailable (${error.message}): the run waits, uncounted, and goes on when it answers.`), readError: error.message };
      case "give_up":
        return ends(v, `${what}, and this run's recovery attempts are spent (${evidence.attempts} of ${evidence.maxAttempts}): it would end with Retry.`, error.message);
      case "try_again":
        return {
          prediction: "operator",
          path: null,
          code: null,
          restsIn: null,
          owner: null,
          canRetry: null,
          reason: `${what}: a restart would count a failed recovery attempt (${evidence.attempts} of ${evidence.maxAttempts}) and look again after ${v.backoffMs ?? 0} ms. What it then decides cannot be forecast: look at the run.`,
          steps,
          readError: error.message,
        };
      default:
        return v.verdict;
    }
  };

  const phase = e.run.phase;
  if (phase !== null && !(RUN_PHASES as readonly string[]).includes(phase)) {
    return attempt({ message: `run ${e.run.id} has an unknown phase ${phase}`, failure: { kind: "other", status: null, code: null, retryAfterMs: null } }, `The run's phase ${phase} is unknown to recovery`);
  }
  const base: RecoveryRouteEvidence = {
    kind: "recovery_route",
    phase: phase as RecoveryRouteEvidence["phase"],
    sandboxMode: e.run.sandboxMode,
    turnsDone: e.run.turnsDone,
    sandboxBound: e.lease !== null,
    runner: null,
  };
  let route = judge(routeRecovery(base), base);
  const lease = e.lease;
  // A warm run's lease is taken up again as `resumed` before a runner read or a reattach (`resumeLease`).
  const reads = route.verdict === "read_runner" || route.verdict === "recover_session";
  const target = lease && reads && e.run.sandboxMode === "warm" ? { ...lease, acquisitionOutcome: "resumed" as const } : lease;

  if (target && (reads || route.verdict === "recover_bootstrap")) {
    // bringUpSandbox: a sandbox that is not started is started again, or the run ends.
    if (!e.sandbox) return { need: "sandbox" };
    if (!e.sandbox.ok) return attempt(e.sandbox.error, `The provider's view of sandbox ${target.providerLeaseId} could not be read (${e.sandbox.error.message})`);
    const sb: StoppedSandboxEvidence = {
      kind: "stopped_sandbox",
      sandboxState: e.sandbox.state,
      desiredState: e.sandbox.desiredState,
      startAttempts: e.sandbox.startAttempts,
      maxStartAttempts: e.limits.maxSandboxStartAttempts,
    };
    const up = judge(decideStoppedSandbox(sb), sb);
    switch (up.verdict) {
      case "proceed":
        break;
      case "end_run":
        return ends(up, `The run's sandbox ${target.providerLeaseId} is ${sb.sandboxState ?? "gone"} and cannot be started again: the run would end with Retry.`);
      case "start_sandbox":
        return continues(
          "start_sandbox",
          `The run's sandbox is ${sb.sandboxState}: a restart would start it again (attempt ${sb.startAttempts + 1} of ${sb.maxStartAttempts}). Its runner can only be read once it runs, so what follows (resume or refusal) is decided then.`,
        );
      case "wait": {
        // Recovery throws on a transition: the attempt is counted and judged (§2.8).
        const judged = attempt(
          { message: `sandbox ${target.providerLeaseId} is ${sb.sandboxState}: recovery looks again after its back-off`, failure: { kind: "other", status: null, code: null, retryAfterMs: null } },
          `The run's sandbox is ${sb.sandboxState} (in transition)`,
        );
        if (judged.prediction !== "operator") return judged;
        return { ...continues("wait_for_sandbox", `The run's sandbox is ${sb.sandboxState}: a restart would count an attempt and look again after its back-off.`), readError: null };
      }
      default:
        return up.verdict;
    }
  }

  if (route.verdict === "read_runner" && target) {
    if (!e.runner) return { need: "runner" };
    if (!e.runner.ok) return attempt(e.runner.error, `The runner on sandbox ${target.providerLeaseId} could not be read (${e.runner.error.message})`);
    const s = e.runner.state;
    const own = s !== null && s.runId === e.run.id && s.runnerInstanceId === e.run.runnerInstanceId && s.sessionId === e.run.sessionId;
    const routed: RecoveryRouteEvidence = {
      ...base,
      runner: {
        state: s ? { ownedByRun: own, lastConnectionProtocolVersion: s.lastConnectionProtocolVersion, lifecycle: s.lifecycle, turnInFlight: s.inFlightSeq, lastProcessedSeq: s.lastProcessedSeq } : null,
        process: e.runner.process,
      },
    };
    route = judge(routeRecovery(routed), routed);
  }

  switch (route.verdict) {
    case "restart_acquire":
      return continues("acquire_again", "Nothing reached a runner yet: the bootstrap starts again from acquiring a sandbox.");
    case "finish":
      return continues("finish", "The run was finishing: a restart finishes it.");
    case "next_turn_sandbox":
      return continues("next_turn_sandbox", "Between two per-turn sandboxes: the checkpoint carries the session on to the next sandbox.");
    case "restart_bootstrap_fresh":
      return continues("bootstrap_fresh", "No runner was ever started on the sandbox: the bootstrap starts again on it.");
    case "refused":
      return ends(route, "The run had opened its session but holds no sandbox lease: it would end with Retry.");
    case "read_runner":
      // Recovery throws here (a route asking for the runner without a sandbox): counted.
      return attempt({ message: `run ${e.run.id}: recovery asked for the runner without a sandbox to read it on`, failure: { kind: "other", status: null, code: null, retryAfterMs: null } }, "Recovery would ask for a runner without a sandbox");
    case "recover_bootstrap":
      return bootstrap();
    case "recover_session":
      return session();
    default:
      return route.verdict;
  }

  function runnerReading(): { state: ForecastRunnerState | null; process: RunnerProcessReading } | { need: "runner" } | { failed: ForecastOutcome } {
    if (!e.runner) return { need: "runner" };
    if (!e.runner.ok) return { failed: attempt(e.runner.error, `The runner could not be read (${e.runner.error.message})`) };
    return e.runner;
  }

  /** §2.2, as `recoverBootstrap` gathers it (the runner of this run stopped first: assumed to stop). */
  function bootstrap(): ForecastAnswer {
    const t = target!;
    const r = runnerReading();
    if ("need" in r) return r;
    if ("failed" in r) return r.failed;
    if (!e.files) return { need: "files" };
    if (!e.files.ok) return attempt(e.files.error, `The runner's files on sandbox ${t.providerLeaseId} could not be read (${e.files.error.message})`);
    const runnerInstanceId = e.run.runnerInstanceId ?? "unknown";
    const sessionId = e.run.sessionId ?? "unknown";
    const s = r.state;
    // Recovery stops this run's own runner before it looks at the process: a stop that works leaves it `stopped`.
    const stopsIt = s !== null && s.runId === e.run.id && s.runnerInstanceId === runnerInstanceId;
    const evidence: BootstrapRestartEvidence = {
      kind: "bootstrap_restart",
      acquisitionOutcome: t.acquisitionOutcome,
      run: { id: e.run.id, runnerInstanceId, sessionId },
      claim: { kind: "bootstrap_incomplete", runId: e.run.id, runnerInstanceId, sessionId },
      localProof: e.files.localProof,
      runnerState: s ? runnerStateEvidence(s) : null,
      providerStatePresent: s?.providerStatePresent === true || e.files.providerStatePresent,
      failoverBackup: e.files.failoverBackup,
      archivedRotationSnapshot: e.files.archivedRotationSnapshot,
      runnerProcess: stopsIt && r.process === "running" ? "stopped" : r.process,
    };
    const v = judge(evaluateBootstrapRestart(evidence), evidence);
    if (v.verdict === "restart_bootstrap") return continues("bootstrap_restart", `The bootstrap restarts on the same sandbox (proven by ${v.proofSource ?? "?"}).`);
    return ends(v, `A bootstrap restart would be refused (${failed(v.checks)}): the run would end with Retry.`);
  }

  /** §2.1 then `resume_dead_runner`, as `recoverSession` and `resumeIfDead` gather them. */
  function session(): ForecastAnswer {
    const t = target!;
    const r = runnerReading();
    if ("need" in r) return r;
    if ("failed" in r) return r.failed;
    const s = r.state;
    const staged = e.run.sandboxMode === "per_turn";
    const binding: LeaseBindingEvidence = {
      kind: "lease_binding",
      path: staged ? "staged_attachment" : "remote_reattach",
      claim: { runId: e.run.id, remote: { providerLeaseId: e.run.checkpoint.providerLeaseId, remoteCwd: e.run.checkpoint.remoteCwd } },
      target: { runId: t.runId ?? e.run.id, providerLeaseId: t.providerLeaseId, remoteCwd: s?.workDir ?? null, acquisitionOutcome: t.acquisitionOutcome },
      staged: staged
        ? {
            headerReadable: s !== null,
            sourceRunMatches: s?.runId === e.run.id,
            ...(s?.programDigest ? { templateDigestMatches: s.programDigest === e.runnerProgramDigest } : {}),
            runnerIdentityMatches: s?.runnerInstanceId === e.run.runnerInstanceId,
          }
        : null,
    };
    const bound = judge(rules.leaseBinding(binding), binding);
    if (bound.verdict !== "admitted") return ends(bound, `The reattach would be refused (${bound.code ?? "refused"}: ${failed(bound.checks)}): the run would end with Retry.`);
    const resume: RunnerResumeEvidence = {
      kind: "runner_resume",
      run: { runId: e.run.id, runnerInstanceId: e.run.runnerInstanceId, sessionId: e.run.sessionId },
      state: s
        ? { runId: s.runId, runnerInstanceId: s.runnerInstanceId, sessionId: s.sessionId, lifecycle: s.lifecycle, lastConnectionProtocolVersion: s.lastConnectionProtocolVersion, turnInFlight: s.inFlightSeq }
        : null,
      process: r.process,
    };
    const v = judge(decideRunnerResume(resume), resume);
    switch (v.verdict) {
      case "reattach":
        return continues("reattach", "Its runner is alive on the proven lease: a restart reattaches to it and the run goes on.");
      case "resume":
        return continues("resume", "Its runner is gone but its state is resumable: a restart starts it again on that state and the run goes on.");
      case "refused":
        return ends(v, `Its runner died and cannot be resumed (${failed(v.checks)}): the run would end with Retry.`);
      default:
        return v.verdict;
    }
  }
}

function failed(checks: readonly Check[]): string {
  const names = checks.filter((c) => !c.ok).map((c) => c.name);
  return names.length ? names.join(", ") : "no check passed";
}

/**
 * Whether the runner process a state names is running, from a read-only look at the
 * sandbox's `/proc/PID/stat` — the rule of runnerd's own `ctl process` (`alive`): the pid's
 * stat exists, is not a zombie, and its start ticks (field 22) equal the recorded ones when
 * both are known. No state: `absent`; a state without a process identity: `stopped`; no
 * procfs to look in: `unknown` (never guessed).
 */
export function judgeRunnerProcess(
  state: { process: { pid: number; startTicks?: number | null } | null } | null,
  look: { procfs: boolean; stat: string | null },
): RunnerProcessReading {
  if (!state) return "absent";
  if (!state.process) return "stopped";
  if (!look.procfs) return "unknown";
  if (look.stat === null || look.stat.trim() === "") return "stopped";
  const stat = look.stat;
  const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  if (rest[0] === "Z" || rest[0] === "X") return "stopped";
  const ticks = Number(rest[19]);
  if (!Number.isFinite(ticks)) return "unknown";
  return state.process.startTicks == null || state.process.startTicks === ticks ? "running" : "stopped";
}
