import { failureEntry, type FailureCode, type OutcomeClass, type Owner } from "./catalogue";
import { assertNever } from "./checks";
import type { Verdict } from "./verdicts";

/** What a run row carries when a verdict ends or reschedules it: all of it from the catalogue. */
export interface RestingFailure {
  code: FailureCode;
  outcome: OutcomeClass;
  owner: Owner;
  canRetry: boolean;
  message: string;
  nextAction: string;
}

/**
 * Where a run rests after a run-deciding verdict (docs/rules.md §3: the run never
 * contradicts its proof). Null when the verdict lets the run go on, and for kinds that
 * decide about processes, intents, fences or sandboxes rather than runs. A lease-binding
 * refusal rests in its continuation (§2.1), not in the refusal code.
 */
export function restingFailure(v: Verdict): RestingFailure | null {
  switch (v.kind) {
    case "lease_binding":
      if (v.verdict === "admitted") return null;
      return v.continuation ?? entry("native_continuation_requires_reconciliation");
    case "bootstrap_restart":
      return v.verdict === "refused" ? entry(v.code ?? "native_restart_recovery_blocked") : null;
    case "startup_failure":
      return entry(v.code);
    case "turn_result":
      return v.verdict === "turn_failed" ? entry(v.code ?? "agent_command_failed") : null;
    case "recovery_attempt":
      return v.verdict === "give_up" ? entry(v.code ?? "native_recovery_attempts_exhausted") : null;
    case "stopped_sandbox":
      return v.verdict === "end_run" ? entry(v.code ?? "sandbox_not_restartable") : null;
    case "runner_resume":
      return v.verdict === "refused" ? entry(v.code ?? "runner_not_resumable") : null;
    case "recovery_route":
      return v.verdict === "refused" ? entry(v.code ?? "native_continuation_requires_reconciliation") : null;
    case "process_exit":
    case "creation_intent":
    case "teardown_fence":
    case "sandbox_ownership":
      return null;
    default:
      return assertNever(v);
  }
}

/** The failure code a run rests in after this verdict, or null. */
export function restingCode(v: Verdict): FailureCode | null {
  return restingFailure(v)?.code ?? null;
}

/** The proof kinds whose verdicts decide a run's failure (the others act on processes and sandboxes). */
export const RUN_DECIDING_KINDS = ["startup_failure", "lease_binding", "bootstrap_restart", "turn_result", "recovery_attempt", "recovery_route", "stopped_sandbox", "runner_resume"] as const;

function entry(code: FailureCode): RestingFailure {
  const { outcome, owner, canRetry, message, nextAction } = failureEntry(code);
  return { code, outcome, owner, canRetry, message, nextAction };
}
