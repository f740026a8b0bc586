import { failureFields, type FailureCode } from "./catalogue";
import { check } from "./checks";
import type { TurnResultEvidence } from "./schemas";
import type { TurnResult } from "./verdicts";

/**
 * Did an agent turn succeed? (docs/rules.md, "Turns") Pure: the runner's
 * own record of the turn decides. A turn the runner processed with a non-zero exit ends the
 * run with `agent_command_failed`; a turn the runner killed at its budget, or one the runner
 * gave no record of within the controller's deadline, with `agent_turn_timeout` (both owner
 * agent, Retry). A failed turn is stored as this proof.
 */
export function judgeTurnResult(e: TurnResultEvidence): TurnResult {
  const { record } = e;
  if (record === null) {
    const checks = [check("runner_record_within_deadline", false, e.deadline?.deadlineMs ?? null, e.deadline?.waitedMs ?? null)];
    return failed("agent_turn_timeout", "no_record_within_deadline", checks);
  }
  const thisTurn = record.seq === e.expectedSeq;
  const checks = [check("runner_record_is_this_turn", thisTurn, e.expectedSeq, record.seq)];
  if (!thisTurn) return failed("agent_command_failed", "other_turn", checks);
  // A runner that keeps a budget says whether the turn stayed within it.
  if (record.timedOut !== undefined) {
    checks.push(check("agent_command_within_budget", !record.timedOut, e.budgetMs ?? null, record.durationMs ?? null));
    if (record.timedOut) return failed("agent_turn_timeout", "turn_timed_out", checks);
  }
  const exitedZero = record.exitCode === 0;
  checks.push(check("agent_command_exit_code", exitedZero, 0, record.exitCode));
  if (!exitedZero) return failed("agent_command_failed", "exit_non_zero", checks);
  return { kind: "turn_result", verdict: "turn_succeeded", code: null, reason: "exit_zero", checks, ...failureFields(null) };
}

function failed(code: Extract<FailureCode, "agent_command_failed" | "agent_turn_timeout">, reason: TurnResult["reason"], checks: TurnResult["checks"]): TurnResult {
  return { kind: "turn_result", verdict: "turn_failed", code, reason, checks, ...failureFields(code) };
}
