import { describeFailure } from "./catalogue";

/** What Retry admission looks at (docs/rules.md §2.7): the run, and its task's other live run. */
export interface RetryAdmissionInput {
  run: { status: string; outcome: string | null; canRetry: boolean; failureCode: string | null; taskId: string };
  /** A successor an earlier Retry made: the same one is returned, never a second. */
  successorId: string | null;
  /** Another live run of the same task (queued, starting, running, suspended), if any. */
  otherLiveRun: { id: string; status: string } | null;
}

export type RetryAdmission =
  | { verdict: "existing_successor"; successorId: string; refusal: null }
  | { verdict: "admitted"; refusal: null }
  | { verdict: "refused"; reason: "not_terminal_failure" | "scheduled_retry" | "retry_not_offered" | "task_busy"; refusal: string };

/**
 * Retry admission (docs/rules.md §2.7), pure: offered only on a terminal failure with
 * `canRetry`, or on a cancelled run (§2.11: a person ended it, so running the task again is
 * theirs to ask); admitted when the task has no other live run; a run already retried
 * answers with its successor. `refusal` is the plain sentence a board user reads.
 */
export function admitRetry(input: RetryAdmissionInput): RetryAdmission {
  const { run } = input;
  if (input.successorId) return { verdict: "existing_successor", successorId: input.successorId, refusal: null };
  if (run.status === "cancelled") return taskFree(input);
  if (run.status !== "failed" || run.outcome !== "terminal_failure") {
    return run.outcome === "retryable_failure"
      ? { verdict: "refused", reason: "scheduled_retry", refusal: "This run is already scheduled to try again on its own." }
      : { verdict: "refused", reason: "not_terminal_failure", refusal: `Retry is offered only for a run that ended in a failure or was cancelled; this one is ${run.status}.` };
  }
  if (!run.canRetry) {
    return { verdict: "refused", reason: "retry_not_offered", refusal: describeFailure(run.failureCode)?.nextAction ?? "Retry is not offered for this failure." };
  }
  return taskFree(input);
}

/** The last check of every admission: the task holds at most one live run. */
function taskFree(input: RetryAdmissionInput): RetryAdmission {
  if (input.otherLiveRun) {
    const o = input.otherLiveRun;
    return { verdict: "refused", reason: "task_busy", refusal: `Task ${input.run.taskId} already has a run that is ${o.status} (${o.id}).` };
  }
  return { verdict: "admitted", refusal: null };
}
