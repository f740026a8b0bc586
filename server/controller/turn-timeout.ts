import type { EnvironmentLease, Run } from "../db/client";
import { judgeTurnResult, type TurnResultEvidence } from "../engine";
import type { ProcessedCommand, TurnDeadlineError } from "../providers/runner";
import type { ControllerContext } from "./context";
import { finishRunFailed } from "./outcome";

/** The run's own turn budget, else the controller's (RUNWARDEN_TURN_TIMEOUT_MS). */
export function turnBudgetMs(ctx: ControllerContext, run: Pick<Run, "turnTimeoutMs">): number {
  return run.turnTimeoutMs ?? ctx.config.turnTimeoutMs;
}

/**
 * The evidence of a turn the runner answered: its record, with the runner's timeout flag and
 * the budget it ran under when the runner keeps one (docs/rules.md, "Turns").
 */
export function turnEvidence(seq: number, command: ProcessedCommand): TurnResultEvidence {
  return {
    kind: "turn_result",
    expectedSeq: seq,
    record: {
      seq: command.seq,
      exitCode: command.exitCode ?? null,
      ...(command.timedOut != null ? { timedOut: command.timedOut } : {}),
      ...(command.durationMs != null ? { durationMs: command.durationMs } : {}),
    },
    ...(command.timeoutMs != null && command.timeoutMs > 0 ? { budgetMs: command.timeoutMs } : {}),
  };
}

/** The run's failure detail for a failed turn's record. */
export function turnFailureDetail(seq: number, command: ProcessedCommand): string {
  if (command.timedOut) return `turn ${seq}: the agent command ran past its budget of ${command.timeoutMs ?? "?"} ms; the runner killed its process group`;
  return `turn ${seq}: the agent command exited ${command.exitCode ?? "without a code"}`;
}

/**
 * The runner gave no record of the turn within its budget plus the margin (a hung runner):
 * the controller stopped polling and the run ends by the engine's verdict, `agent_turn_timeout`,
 * as a failed turn does (`turn_result` proof, `finishRunFailed`: the sandbox is torn down).
 */
export async function endTurnPastDeadline(ctx: ControllerContext, run: Run, lease: EnvironmentLease, err: TurnDeadlineError): Promise<void> {
  const evidence: TurnResultEvidence = {
    kind: "turn_result",
    expectedSeq: err.seq,
    record: null,
    budgetMs: turnBudgetMs(ctx, run),
    deadline: { deadlineMs: err.deadlineMs, waitedMs: err.waitedMs },
  };
  const judgement = judgeTurnResult(evidence);
  // The proof and its event land with the fenced ending, or not at all (§2.10).
  await finishRunFailed(ctx, run, judgement, `turn ${err.seq}: the runner gave no record within ${err.deadlineMs} ms (the turn's budget plus a margin)`, {
    landing: {
      proofs: [{ verdict: judgement, evidence, links: { leaseId: lease.id, sandboxId: lease.providerLeaseId } }],
      events: [{ type: "turn_failed", data: { turn: err.seq, exitCode: null, durationMs: err.waitedMs, outputTail: err.message, checks: judgement.checks } }],
    },
  });
}
