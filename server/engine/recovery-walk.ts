import { judgeBootstrapRestart, runnerStateEvidence } from "./bootstrap-restart";
import { judgeLeaseBinding } from "./lease-binding";
import { judgeRecoveryRoute } from "./recovery-route";
import { judgeRunnerResume } from "./runner-resume";
import {
  RUN_PHASES,
  RUNNER_LIFECYCLES,
  type BootstrapRestartEvidence,
  type CLAIM_KINDS,
  type LeaseBindingEvidence,
  type RecoveryAttemptEvidence,
  type RecoveryRouteEvidence,
  type RunnerResumeEvidence,
  type StoppedSandboxEvidence,
} from "./schemas";
import { judgeStoppedSandbox } from "./stopped-sandbox";
import type { Check, Verdict } from "./verdicts";

/**
 * The recovery walk (docs/rules.md §2.1, §2.2, §2.8, "The recovery route"), written once: for an
 * interrupted run's evidence so far, the next reading (or act) it needs, or the outcome. Both
 * recovery (`controller/recovery/recover.ts`) and the restart forecast (`engine/forecast.ts`,
 * §2.12) call it; they differ only in how they answer a need — recovery reads and acts, the
 * forecast reads without changing anything and supposes an act's result where it can be known
 * (a lease taken up again, this run's own runner stopped) and stops where it cannot (a sandbox
 * started again). A forecast therefore cannot walk an order recovery does not.
 *
 * The order: `judgeRecoveryRoute`; a warm run's lease taken up again (`resume_lease`); the
 * sandbox brought up (`judgeStoppedSandbox`, a start counted per sandbox); the runner read
 * and routed again; then §2.2 (`judgeBootstrapRestart`, after this run's own runner is
 * stopped) or §2.1 (`leaseBinding`) and `judgeRunnerResume`. Every verdict on the way is a
 * step, in order: the proofs recovery stores. The walk is pure and prefix-stable — evidence
 * only grows, so the steps of an earlier answer are the first steps of every later one; the
 * shell stores the steps it has not stored yet before it acts (an act is never without its
 * proof) and the rest with the outcome.
 */

/** What the walk can ask for. `ACTS` change something; the rest are reads. */
export const RECOVERY_NEEDS = ["resume_lease", "sandbox", "sandbox_start", "runner", "runner_stop", "files"] as const;
export type RecoveryNeed = (typeof RECOVERY_NEEDS)[number];
/** Needs that act on the run's sandbox or lease: the proofs so far are stored first. */
export const RECOVERY_ACTS: ReadonlySet<RecoveryNeed> = new Set(["resume_lease", "sandbox_start", "runner_stop"]);

/** A reading that failed (the forecast's; recovery throws instead): what `judgeRecoveryAttempt` would be given. */
export interface RecoveryReadError {
  message: string;
  failure?: RecoveryAttemptEvidence["failure"];
  provider?: RecoveryAttemptEvidence["provider"];
}

type Reading<T> = ({ ok: true } & T) | { ok: false; error: RecoveryReadError };

/** The runner's durable state as read (runner-state.json), the fields the proofs take. */
export interface WalkRunnerState {
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
  /** The highest processed seq; null none; undefined: a record could not be read. */
  lastProcessedSeq: number | null | undefined;
  workDir: string | null;
  programDigest: string | null;
}

export type RunnerProcessReading = "running" | "stopped" | "absent" | "unknown";

export interface WalkLease {
  id: string;
  runId: string | null;
  providerLeaseId: string;
  /** The lease's remote directory (what a bootstrap or resume claim names); the forecast's may omit it. */
  remoteCwd?: string | null;
  acquisitionOutcome: "created" | "resumed" | "replacement";
}

export interface RecoveryWalkEvidence {
  now: string;
  run: {
    id: string;
    phase: string | null;
    sandboxMode: "warm" | "per_turn";
    turnsDone: number;
    runnerInstanceId: string | null;
    sessionId: string | null;
    /** The run's checkpoint: what a §2.1 claim names (never filled from the target). */
    checkpoint: { providerLeaseId: string | null; remoteCwd: string | null };
  };
  limits: { maxSandboxStartAttempts: number };
  /** The run's active lease with a provider sandbox id, or null. */
  lease: WalkLease | null;
  /** `resume_lease`: a warm run's lease taken up again as `resumed` (a new lease on the same sandbox). */
  resumedLease?: WalkLease;
  /** `sandbox`: the provider's `get` of the target sandbox, and the start attempts already counted on it. */
  sandbox?: Reading<{ state: string | null; desiredState: string | null; startAttempts: number }>;
  /** `sandbox_start`: the provider's `get` again after a start was attempted (counted), and what the start said. */
  sandboxStart?: Reading<{ state: string | null; desiredState: string | null; startAttempts: number; error: string | null }>;
  /** `runner`: runner-state.json (null: none) and the runner process. */
  runner?: Reading<{ state: WalkRunnerState | null; process: RunnerProcessReading }>;
  /** `runner_stop`: after this run's own runner was asked to stop, its process and state read again. */
  runnerStop?: Reading<{ state: WalkRunnerState | null; process: RunnerProcessReading }>;
  /** `files`: §2.2's files beside the state, and the local restart proof from this controller's home. */
  files?: Reading<{ providerStatePresent: boolean; failoverBackup: boolean; archivedRotationSnapshot: boolean; localProof: { recordedAt: string } | null }>;
  /** The released runner programs (runner/releases.json: digest → protocol) and the protocols this controller drives (§2.1). */
  runnerReleases: RunnerReleases;
}

export interface RunnerReleases {
  releases: Readonly<Record<string, number>>;
  speaks: { min: number; max: number };
}

type ClaimKind = (typeof CLAIM_KINDS)[number];

/** A claim a step belongs to (`recovery_claims`): made with the proof that decides it. */
export interface ClaimDraft {
  kind: ClaimKind;
  providerLeaseId: string | null;
  remoteCwd: string | null;
  runnerInstanceId: string | null;
  sessionId: string | null;
}

/** One verdict on the way, with its evidence and what it is about. */
export interface WalkStep {
  verdict: Verdict;
  evidence: unknown;
  leaseId: string | null;
  sandboxId: string | null;
  claim: ClaimDraft | null;
}

/** Where a continuing run goes on from (the forecast's path names). */
export type ContinuePath = "acquire_again" | "finish" | "next_turn_sandbox" | "bootstrap_fresh" | "bootstrap_restart" | "reattach" | "resume";

export type RecoveryOutcome =
  /** The run goes on from `phase` (reattach/resume: after the runner is reattached or resumed on `lease`). */
  | {
      kind: "continue";
      path: ContinuePath;
      phase: "acquiring" | "bootstrapping" | "finishing" | "session_open";
      recoveryMode: "bootstrap_retry" | "exact_checkpoint_resume";
      /** `next_turn_sandbox` on a sandbox still bound: that lease is given back first. */
      giveBack: WalkLease | null;
      lease: WalkLease | null;
      why: string;
    }
  /** The run ends by `verdict` (it rests where `restingFailure` says). */
  | { kind: "end"; verdict: Verdict; detail: string; recoveryState: "blocked" | null; recoveryMode: "ambiguous_state" | null; lease: WalkLease | null }
  /** A reading failed: recovery counts it (§2.8); the forecast judges what counting would do. */
  | { kind: "read_failed"; error: RecoveryReadError; what: string }
  /** Recovery cannot go on now (a sandbox in transition, a start that did not take, …): counted and looked at again after a back-off (§2.8). */
  | { kind: "look_again"; message: string; what: string; sandboxWait: boolean };

export type RecoveryWalkAnswer = { steps: WalkStep[] } & ({ need: RecoveryNeed } | { outcome: RecoveryOutcome });

/** The engine functions the walk calls; the controller hands in its own lease binding (its test-only break rule). */
export interface RecoveryRules {
  leaseBinding: (e: LeaseBindingEvidence) => Verdict;
}

const DEFAULT_RULES: RecoveryRules = { leaseBinding: judgeLeaseBinding };

export function walkRecovery(e: RecoveryWalkEvidence, rules: RecoveryRules = DEFAULT_RULES): RecoveryWalkAnswer {
  const steps: WalkStep[] = [];
  const step = <V extends Verdict>(verdict: V, evidence: unknown, lease: WalkLease | null, claim: ClaimDraft | null = null): V => {
    steps.push({ verdict, evidence, leaseId: lease?.id ?? null, sandboxId: lease?.providerLeaseId ?? null, claim });
    return verdict;
  };
  const need = (n: RecoveryNeed): RecoveryWalkAnswer => ({ steps, need: n });
  const outcome = (o: RecoveryOutcome): RecoveryWalkAnswer => ({ steps, outcome: o });
  const go = (path: ContinuePath, phase: Extract<RecoveryOutcome, { kind: "continue" }>["phase"], recoveryMode: Extract<RecoveryOutcome, { kind: "continue" }>["recoveryMode"], why: string, lease: WalkLease | null = null, giveBack: WalkLease | null = null) =>
    outcome({ kind: "continue", path, phase, recoveryMode, giveBack, lease, why });
  const end = (verdict: Verdict, detail: string, lease: WalkLease | null, recoveryState: "blocked" | null = "blocked", recoveryMode: "ambiguous_state" | null = null) =>
    outcome({ kind: "end", verdict, detail, recoveryState, recoveryMode, lease });

  const phase = e.run.phase;
  if (phase !== null && !(RUN_PHASES as readonly string[]).includes(phase)) {
    return outcome({ kind: "look_again", message: `run ${e.run.id} has an unknown phase ${phase}`, what: `The run's phase ${phase} is unknown to recovery`, sandboxWait: false });
  }
  const bound = e.lease;
  const base: RecoveryRouteEvidence = {
    kind: "recovery_route",
    phase: phase as RecoveryRouteEvidence["phase"],
    sandboxMode: e.run.sandboxMode,
    turnsDone: e.run.turnsDone,
    sandboxBound: bound !== null,
    runner: null,
  };
  let route = step(judgeRecoveryRoute(base), base, bound);
  const reads = route.verdict === "read_runner" || route.verdict === "recover_session";

  // A warm run's lease is taken up again as `resumed` before its runner is read or reattached to.
  let target = bound;
  if (bound && reads && e.run.sandboxMode === "warm") {
    if (!e.resumedLease) return need("resume_lease");
    target = e.resumedLease;
  }

  if (target && (reads || route.verdict === "recover_bootstrap")) {
    // A sandbox that stopped while no controller watched it (Daytona's auto-stop) is started
    // again before anything is read from it, or the run ends by the engine's verdict.
    if (!e.sandbox) return need("sandbox");
    if (!e.sandbox.ok) return outcome({ kind: "read_failed", error: e.sandbox.error, what: `The provider's view of sandbox ${target.providerLeaseId} could not be read (${e.sandbox.error.message})` });
    const seen: StoppedSandboxEvidence = { kind: "stopped_sandbox", sandboxState: e.sandbox.state, desiredState: e.sandbox.desiredState, startAttempts: e.sandbox.startAttempts, maxStartAttempts: e.limits.maxSandboxStartAttempts };
    let up = step(judgeStoppedSandbox(seen), seen, target);
    let startError: string | null = null;
    if (up.verdict === "start_sandbox") {
      if (!e.sandboxStart) return need("sandbox_start");
      if (!e.sandboxStart.ok) return outcome({ kind: "read_failed", error: e.sandboxStart.error, what: `Sandbox ${target.providerLeaseId} could not be started (${e.sandboxStart.error.message})` });
      const after: StoppedSandboxEvidence = { ...seen, sandboxState: e.sandboxStart.state, desiredState: e.sandboxStart.desiredState, startAttempts: e.sandboxStart.startAttempts };
      up = step(judgeStoppedSandbox(after), after, target);
      startError = e.sandboxStart.error;
    }
    switch (up.verdict) {
      case "proceed":
        break;
      case "end_run":
        return end(up, `the run's sandbox ${target.providerLeaseId} is ${(steps[steps.length - 1]!.evidence as StoppedSandboxEvidence).sandboxState ?? "gone"} and could not be started again`, target, null);
      case "wait":
      case "start_sandbox": {
        const state = (steps[steps.length - 1]!.evidence as StoppedSandboxEvidence).sandboxState;
        return outcome({
          kind: "look_again",
          message: `sandbox ${target.providerLeaseId} is ${state}${startError ? ` (start failed: ${startError})` : ""}: recovery looks again after its back-off`,
          what: `The run's sandbox is ${state} (in transition)`,
          sandboxWait: up.verdict === "wait" && !e.sandboxStart,
        });
      }
      default:
        return assertNeverVerdict(up.verdict);
    }
  }

  if (route.verdict === "read_runner" && target) {
    // The run's own record can lag the sandbox by one step: the runner's durable state says
    // whether it never started, or already opened its session.
    if (!e.runner) return need("runner");
    if (!e.runner.ok) return outcome({ kind: "read_failed", error: e.runner.error, what: `The runner on sandbox ${target.providerLeaseId} could not be read (${e.runner.error.message})` });
    const s = e.runner.state;
    const own = s !== null && s.runId === e.run.id && s.runnerInstanceId === e.run.runnerInstanceId && s.sessionId === e.run.sessionId;
    const routed: RecoveryRouteEvidence = {
      ...base,
      runner: {
        state: s ? { ownedByRun: own, lastConnectionProtocolVersion: s.lastConnectionProtocolVersion, lifecycle: s.lifecycle, turnInFlight: s.inFlightSeq, lastProcessedSeq: s.lastProcessedSeq } : null,
        process: e.runner.process,
      },
    };
    route = step(judgeRecoveryRoute(routed), routed, target);
  }

  switch (route.verdict) {
    case "restart_acquire":
      // Nothing reached a runner: the bootstrap simply starts again (an intent that may have
      // created a sandbox is reclaimed by the sweep, since its creator is gone).
      return go("acquire_again", "acquiring", route.recoveryMode ?? "bootstrap_retry", "no sandbox was bound to a runner yet");
    case "finish":
      return go("finish", "finishing", "exact_checkpoint_resume", "the run was finishing");
    case "next_turn_sandbox":
      // Between two per-turn sandboxes: the checkpoint carries the session to the next one.
      // A sandbox still bound (its runner stopped with every turn recorded) is given back first.
      return go("next_turn_sandbox", "acquiring", "exact_checkpoint_resume", "its runner was stopped with every turn recorded", null, target);
    case "restart_bootstrap_fresh":
      return go("bootstrap_fresh", "bootstrapping", "bootstrap_retry", "no runner was ever started on the sandbox", target);
    case "refused":
      return end(route, "the run had opened its session but holds no sandbox lease", null, "blocked", "ambiguous_state");
    case "read_runner":
      return outcome({ kind: "look_again", message: `run ${e.run.id}: recovery asked for the runner without a sandbox to read it on`, what: "Recovery would ask for a runner without a sandbox", sandboxWait: false });
    case "recover_bootstrap":
      return target ? bootstrap(target) : noSandbox();
    case "recover_session":
      return target ? session(target) : noSandbox();
    default:
      return assertNeverVerdict(route.verdict);
  }

  function noSandbox(): RecoveryWalkAnswer {
    return outcome({ kind: "look_again", message: `run ${e.run.id} in phase ${phase} without a sandbox`, what: "Recovery would need a sandbox the run does not hold", sandboxWait: false });
  }

  function runnerRead(t: WalkLease): { state: WalkRunnerState | null; process: RunnerProcessReading } | RecoveryWalkAnswer {
    if (!e.runner) return need("runner");
    if (!e.runner.ok) return outcome({ kind: "read_failed", error: e.runner.error, what: `The runner on sandbox ${t.providerLeaseId} could not be read (${e.runner.error.message})` });
    return e.runner;
  }

  /** §2.2: restart the bootstrap from the sandbox's own runner state, or refuse. */
  function bootstrap(t: WalkLease): RecoveryWalkAnswer {
    const r = runnerRead(t);
    if ("steps" in r) return r;
    const runnerInstanceId = e.run.runnerInstanceId ?? "unknown";
    const sessionId = e.run.sessionId ?? "unknown";
    const before = r.state;
    // Only this run's own runner (by the identity in its state) is stopped before judging.
    const own = before !== null && before.runId === e.run.id && before.runnerInstanceId === runnerInstanceId;
    let stopped: { state: WalkRunnerState | null; process: RunnerProcessReading } = r;
    if (own) {
      if (!e.runnerStop) return need("runner_stop");
      if (!e.runnerStop.ok) return outcome({ kind: "read_failed", error: e.runnerStop.error, what: `The runner on sandbox ${t.providerLeaseId} could not be read after it was stopped (${e.runnerStop.error.message})` });
      stopped = e.runnerStop;
    }
    if (!e.files) return need("files");
    if (!e.files.ok) return outcome({ kind: "read_failed", error: e.files.error, what: `The runner's files on sandbox ${t.providerLeaseId} could not be read (${e.files.error.message})` });
    const state = stopped.state ?? before;
    const claim: ClaimDraft = { kind: "bootstrap_incomplete", providerLeaseId: t.providerLeaseId, remoteCwd: t.remoteCwd ?? null, runnerInstanceId, sessionId };
    const evidence: BootstrapRestartEvidence = {
      kind: "bootstrap_restart",
      acquisitionOutcome: t.acquisitionOutcome,
      run: { id: e.run.id, runnerInstanceId, sessionId },
      claim: { kind: "bootstrap_incomplete", runId: e.run.id, runnerInstanceId, sessionId },
      localProof: e.files.localProof,
      // The lifecycle as it was before the runner was stopped.
      runnerState: state ? { ...runnerStateEvidence(state), lifecycle: before?.lifecycle ?? state.lifecycle } : null,
      providerStatePresent: state?.providerStatePresent === true || e.files.providerStatePresent,
      failoverBackup: e.files.failoverBackup,
      archivedRotationSnapshot: e.files.archivedRotationSnapshot,
      runnerProcess: stopped.process,
    };
    const v = step(judgeBootstrapRestart(evidence), evidence, t, claim);
    if (v.verdict === "restart_bootstrap") return go("bootstrap_restart", "bootstrapping", "bootstrap_retry", `proven by ${v.proofSource ?? "?"}`, t);
    return end(v, `bootstrap restart refused: ${failedChecks(v.checks)}`, t);
  }

  /** §2.1, then `resume_dead_runner`: reattach to the surviving runner on the claimed lease, resume a dead one, or refuse. */
  function session(t: WalkLease): RecoveryWalkAnswer {
    const r = runnerRead(t);
    if ("steps" in r) return r;
    const s = r.state;
    const staged = e.run.sandboxMode === "per_turn";
    // The claim names what the run's own checkpoint names, and nothing else (§2.1): filling a
    // gap from the target would make the binding compare a value with itself.
    const claimed = e.run.checkpoint;
    const claim: ClaimDraft = { kind: staged ? "staged_attachment" : "reattach_remote_runner", providerLeaseId: claimed.providerLeaseId, remoteCwd: claimed.remoteCwd, runnerInstanceId: e.run.runnerInstanceId, sessionId: e.run.sessionId };
    const binding: LeaseBindingEvidence = {
      kind: "lease_binding",
      path: staged ? "staged_attachment" : "remote_reattach",
      claim: { runId: e.run.id, remote: claimed },
      target: { runId: t.runId ?? e.run.id, providerLeaseId: t.providerLeaseId, remoteCwd: s?.workDir ?? null, acquisitionOutcome: t.acquisitionOutcome },
      staged: staged
        ? {
            headerReadable: s !== null,
            sourceRunMatches: s?.runId === e.run.id,
            // A runner that does not say which program it runs proves nothing; a released program
            // whose protocol this controller drives is driven, whichever release shipped it.
            runnerProgram: {
              digest: s?.programDigest ?? null,
              protocol: s?.programDigest ? (e.runnerReleases.releases[s.programDigest] ?? null) : null,
              speaks: e.runnerReleases.speaks,
            },
            runnerIdentityMatches: s?.runnerInstanceId === e.run.runnerInstanceId,
          }
        : null,
    };
    const bound = step(rules.leaseBinding(binding), binding, t, claim);
    if (bound.verdict !== "admitted") return end(bound, `reattach refused (${bound.code ?? "refused"}): ${failedChecks(bound.checks)}`, t);
    // The lease is proven. A runner that died (its sandbox stopped, or it was killed) goes on
    // only by the engine's runner_resume verdict.
    const resume: RunnerResumeEvidence = {
      kind: "runner_resume",
      run: { runId: e.run.id, runnerInstanceId: e.run.runnerInstanceId, sessionId: e.run.sessionId },
      state: s
        ? { runId: s.runId, runnerInstanceId: s.runnerInstanceId, sessionId: s.sessionId, lifecycle: s.lifecycle, lastConnectionProtocolVersion: s.lastConnectionProtocolVersion, turnInFlight: s.inFlightSeq }
        : null,
      process: r.process,
    };
    const resumeDecision = judgeRunnerResume(resume);
    // A live runner is reattached to on the lease's own proof; a dead one is resumed (or refused) under a claim of its own.
    const resumeClaim: ClaimDraft | null =
      resumeDecision.verdict === "reattach" ? null : { kind: "resume_dead_runner", providerLeaseId: t.providerLeaseId, remoteCwd: t.remoteCwd ?? null, runnerInstanceId: e.run.runnerInstanceId, sessionId: e.run.sessionId };
    const v = step(resumeDecision, resume, t, resumeClaim);
    switch (v.verdict) {
      case "reattach":
        return go("reattach", "session_open", "exact_checkpoint_resume", "its runner is alive on the proven lease", t);
      case "resume":
        return go("resume", "session_open", "exact_checkpoint_resume", "its runner is gone but its state is resumable", t);
      case "refused":
        return end(v, `the runner died and cannot be resumed: ${failedChecks(v.checks)}`, t);
      default:
        return assertNeverVerdict(v.verdict);
    }
  }
}

export function failedChecks(checks: readonly Check[]): string {
  const names = checks.filter((c) => !c.ok).map((c) => c.name);
  return names.length ? names.join(", ") : "no check passed";
}

function assertNeverVerdict(v: never): never {
  throw new Error(`the recovery walk met a verdict it does not know: ${String(v)}`);
}
