import { describe, expect, it } from "vitest";
import { FAILURE_CATALOGUE } from "./catalogue";
import { admitRetry, type RetryAdmissionInput } from "./retry-admission";
import { isLiveRunStatus, LIVE_RUN_STATUSES } from "./run-status";

const failed = { status: "failed", outcome: "terminal_failure", canRetry: true, failureCode: "native_session_retry_exhausted", taskId: "t-1" };
const input = (over: Partial<Omit<RetryAdmissionInput, "run">> & { run?: Partial<RetryAdmissionInput["run"]> } = {}): RetryAdmissionInput => ({
  successorId: null,
  otherLiveRun: null,
  ...over,
  run: { ...failed, ...over.run },
});

describe("Retry admission (docs/rules.md §2.7)", () => {
  it("admits a terminal failure with Retry whose task has no other live run", () => {
    expect(admitRetry(input())).toEqual({ verdict: "admitted", refusal: null });
  });

  it("returns the successor of a run already retried, whatever else holds", () => {
    expect(admitRetry(input({ successorId: "r-2", otherLiveRun: { id: "r-2", status: "running" } }))).toMatchObject({ verdict: "existing_successor", successorId: "r-2" });
  });

  it.each([
    ["a run still running", { status: "running", outcome: null }, "not_terminal_failure"],
    ["a run that succeeded", { status: "succeeded", outcome: null }, "not_terminal_failure"],
    ["a retryable failure (retried on its own)", { status: "queued", outcome: "retryable_failure" }, "scheduled_retry"],
    ["a terminal failure without Retry (an ownership hold)", { canRetry: false, failureCode: "ambiguous_remote_recovery_evidence" }, "retry_not_offered"],
  ] as const)("refuses %s", (_name, run, reason) => {
    const v = admitRetry(input({ run }));
    expect(v).toMatchObject({ verdict: "refused", reason });
    expect(v.refusal).toBeTruthy();
  });

  it("admits a cancelled run (§2.11) whatever its outcome fields, once, and only while its task is free", () => {
    const cancelled = { status: "cancelled", outcome: null, canRetry: false, failureCode: null };
    expect(admitRetry(input({ run: cancelled }))).toEqual({ verdict: "admitted", refusal: null });
    expect(admitRetry(input({ run: cancelled, successorId: "r-3" }))).toMatchObject({ verdict: "existing_successor", successorId: "r-3" });
    expect(admitRetry(input({ run: cancelled, otherLiveRun: { id: "r-4", status: "running" } }))).toEqual({
      verdict: "refused",
      reason: "task_busy",
      refusal: "Task t-1 already has a run that is running (r-4).",
    });
  });

  it("refuses while the task has another live run, naming it", () => {
    expect(admitRetry(input({ otherLiveRun: { id: "r-9", status: "queued" } }))).toEqual({ verdict: "refused", reason: "task_busy", refusal: "Task t-1 already has a run that is queued (r-9)." });
  });

  it("an ownership hold tells the board what to do, from the catalogue", () => {
    expect(admitRetry(input({ run: { canRetry: false, failureCode: "ambiguous_remote_recovery_evidence" } })).refusal).toBe(FAILURE_CATALOGUE.ambiguous_remote_recovery_evidence.nextAction);
  });

  it("live statuses are the four unfinished ones", () => {
    expect([...LIVE_RUN_STATUSES]).toEqual(["queued", "starting", "running", "suspended"]);
    expect(["succeeded", "failed", "cancelled"].some(isLiveRunStatus)).toBe(false);
  });
});
