import type { Owner } from "./catalogue";
import { judgeRecoveryAttempt } from "./recovery-attempt";
import { failedChecks, walkRecovery, type RecoveryOutcome, type RecoveryReadError, type RecoveryRules, type RecoveryWalkEvidence, type RunnerProcessReading, type WalkLease, type WalkRunnerState } from "./recovery-walk";
import { restingFailure } from "./resting-code";
import type { RecoveryAttemptEvidence } from "./schemas";
import type { Verdict } from "./verdicts";

/**
 * The restart forecast (docs/rules.md §2.12) as a pure function: the evidence a controller
 * restarted now would gather for one run, walked by the same `walkRecovery` recovery walks
 * (engine/recovery-walk.ts). The forecast answers the walk's needs without changing anything:
 * a read is read (the shell is asked for it: `{ need }`), a warm run's lease taken up again is
 * supposed (`resumed`), this run's own runner stopped is supposed to stop, and a sandbox that
 * would be started again ends the forecast there (`start_sandbox`: what follows is decided once
 * it runs). A reading or an outcome recovery would count as a failed attempt goes to
 * `judgeRecoveryAttempt`, as recovery's `countFailedAttempt` does. The hypothesis: the run's
 * executor is gone, the sandbox and its runner are as read.
 */

export const FORECAST_NEEDS = ["sandbox", "runner", "files"] as const;
export type ForecastNeed = (typeof FORECAST_NEEDS)[number];

/** A read that threw: what recovery's `countFailedAttempt` would judge (the `recovery_attempt` evidence's error fields). */
export type ForecastReadError = RecoveryReadError;
/** The runner's durable state as read (runner-state.json), the fields the proofs take. */
export type ForecastRunnerState = WalkRunnerState;
export type { RunnerProcessReading };

export interface ForecastEvidence {
  now: string;
  run: RecoveryWalkEvidence["run"] & { status: string; recoveryAttempts: number; recoveryErrors: string[] };
  limits: { recoveryMaxAttempts: number; recoveryBackoffMs: number; maxSandboxStartAttempts: number };
  /** The run's active lease with a provider sandbox id (recovery's `bound`), or null. */
  lease: WalkLease | null;
  sandbox?: RecoveryWalkEvidence["sandbox"];
  runner?: RecoveryWalkEvidence["runner"];
  files?: RecoveryWalkEvidence["files"];
  runnerReleases: RecoveryWalkEvidence["runnerReleases"];
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
export type ForecastRules = RecoveryRules;

/** What a forecast says of each way recovery goes on. */
const CONTINUES: Record<Extract<RecoveryOutcome, { kind: "continue" }>["path"], string> = {
  acquire_again: "Nothing reached a runner yet: the bootstrap starts again from acquiring a sandbox.",
  finish: "The run was finishing: a restart finishes it.",
  next_turn_sandbox: "Between two per-turn sandboxes: the checkpoint carries the session on to the next sandbox.",
  bootstrap_fresh: "No runner was ever started on the sandbox: the bootstrap starts again on it.",
  bootstrap_restart: "The bootstrap restarts on the same sandbox",
  reattach: "Its runner is alive on the proven lease: a restart reattaches to it and the run goes on.",
  resume: "Its runner is gone but its state is resumable: a restart starts it again on that state and the run goes on.",
};

export function forecastRecovery(e: ForecastEvidence, rules?: ForecastRules): ForecastAnswer {
  const walked: RecoveryWalkEvidence = {
    now: e.now,
    run: e.run,
    limits: { maxSandboxStartAttempts: e.limits.maxSandboxStartAttempts },
    lease: e.lease,
    // Supposed, not done: a warm run's lease would be taken up again as `resumed`.
    ...(e.lease ? { resumedLease: { ...e.lease, acquisitionOutcome: "resumed" as const } } : {}),
    ...(e.sandbox ? { sandbox: e.sandbox } : {}),
    ...(e.runner ? { runner: e.runner } : {}),
    // Supposed: this run's own runner, asked to stop, stops (its state as read).
    ...(e.runner?.ok ? { runnerStop: { ok: true as const, state: e.runner.state, process: e.runner.process === "running" ? ("stopped" as const) : e.runner.process } } : {}),
    ...(e.files ? { files: e.files } : {}),
    runnerReleases: e.runnerReleases,
  };
  const answer = walkRecovery(walked, rules);
  const steps: ForecastStep[] = answer.steps.map((s) => ({ verdict: s.verdict, evidence: s.evidence }));
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
    const v = judgeRecoveryAttempt(evidence);
    steps.push({ verdict: v, evidence });
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

  if ("need" in answer) {
    switch (answer.need) {
      case "sandbox":
      case "runner":
      case "files":
        return { need: answer.need };
      case "sandbox_start": {
        const seen = e.sandbox?.ok ? e.sandbox : null;
        return continues(
          "start_sandbox",
          `The run's sandbox is ${seen?.state ?? "not started"}: a restart would start it again (attempt ${(seen?.startAttempts ?? 0) + 1} of ${e.limits.maxSandboxStartAttempts}). Its runner can only be read once it runs, so what follows (resume or refusal) is decided then.`,
        );
      }
      case "resume_lease":
      case "runner_stop":
        // Supposed above: the walk never asks for them here.
        throw new Error(`the forecast supposes ${answer.need}; the walk asked for it`);
      default:
        return answer.need;
    }
  }
  const o = answer.outcome;
  switch (o.kind) {
    case "continue": {
      const proof = o.path === "bootstrap_restart" ? ` (${o.why})` : "";
      return continues(o.path, o.path === "bootstrap_restart" ? `${CONTINUES.bootstrap_restart}${proof}.` : CONTINUES[o.path]);
    }
    case "end":
      return ends(o.verdict, endReason(o.verdict, o.detail));
    case "read_failed":
      return attempt(o.error, o.what);
    case "look_again": {
      const judged = attempt({ message: o.message, failure: { kind: "other", status: null, code: null, retryAfterMs: null } }, o.what);
      if (!o.sandboxWait || judged.prediction !== "operator") return judged;
      return { ...continues("wait_for_sandbox", `${o.what.replace(" (in transition)", "")}: a restart would count an attempt and look again after its back-off.`), steps: judged.steps };
    }
    default:
      return o;
  }
}

/** The forecast's sentence for an ending: what the proof refused, and that Retry is offered. */
function endReason(v: Verdict, detail: string): string {
  const why = failedChecks(v.checks);
  switch (v.kind) {
    case "recovery_route":
      return "The run had opened its session but holds no sandbox lease: it would end with Retry.";
    case "bootstrap_restart":
      return `A bootstrap restart would be refused (${why}): the run would end with Retry.`;
    case "lease_binding":
      return `The reattach would be refused (${v.code ?? "refused"}: ${why}): the run would end with Retry.`;
    case "runner_resume":
      return `Its runner died and cannot be resumed (${why}): the run would end with Retry.`;
    default:
      // A sandbox that cannot be started again: recovery's own words.
      return `${detail.charAt(0).toUpperCase()}${detail.slice(1)}: the run would end with Retry.`;
  }
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
