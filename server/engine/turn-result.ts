import { failureFields } from "./catalogue";
import { check } from "./checks";
import type { TurnResultEvidence } from "./schemas";
import type { TurnResult } from "./verdicts";

/**
 * Did an agent turn succeed? (issue 11, issue 12 item 1) Pure: the runner's own record of
 * the turn decides. A turn the runner processed with a non-zero exit ends the run with
 * `agent_command_failed` (owner agent, Retry); a failed turn is stored as this proof.
 */
export function judgeTurnResult(e: TurnResultEvidence): TurnResult {
  const { record } = e;
  const thisTurn = record.seq === e.expectedSeq;
  const checks = [check("runner_record_is_this_turn", thisTurn, e.expectedSeq, record.seq)];
  if (!thisTurn) return failed("other_turn");
  const exitedZero = record.exitCode === 0;
  checks.push(check("agent_command_exit_code", exitedZero, 0, record.exitCode));
  if (!exitedZero) return failed("exit_non_zero");
  return { kind: "turn_result", verdict: "turn_succeeded", code: null, reason: "exit_zero", checks, ...failureFields(null) };

  function failed(reason: TurnResult["reason"]): TurnResult {
    return { kind: "turn_result", verdict: "turn_failed", code: "agent_command_failed", reason, checks, ...failureFields("agent_command_failed") };
  }
}
