import { describe, expect, it } from "vitest";
import { failureEntry } from "./catalogue";
import { decide } from "./decide";
import { judgeTurnResult } from "./turn-result";
import { turnResult } from "../test/evidence";
import { verdictSchema } from "./verdicts";

describe("turn_result", () => {
  it("passes a turn whose command exited 0", () => {
    const v = judgeTurnResult(turnResult());
    expect(v).toMatchObject({ kind: "turn_result", verdict: "turn_succeeded", code: null, reason: "exit_zero", canRetry: false, owner: null });
    expect(verdictSchema.parse(v)).toEqual(v);
  });

  it.each([1, 7, 127, null])("fails a turn whose command exited %s with agent_command_failed (owner agent, Retry)", (exitCode) => {
    const v = judgeTurnResult(turnResult({ expectedSeq: 1, record: { seq: 1, exitCode } }));
    expect(v).toMatchObject({ verdict: "turn_failed", code: "agent_command_failed", reason: "exit_non_zero", owner: "agent", canRetry: true });
    expect(v.checks.find((c) => c.name === "agent_command_exit_code")).toMatchObject({ ok: false, actual: exitCode });
    expect(failureEntry("agent_command_failed")).toMatchObject({ owner: "agent", canRetry: true, outcome: "terminal_failure" });
  });

  it("fails a record of another turn, without judging its exit code", () => {
    const v = judgeTurnResult(turnResult({ expectedSeq: 3, record: { seq: 2, exitCode: 0 } }));
    expect(v).toMatchObject({ verdict: "turn_failed", reason: "other_turn" });
    expect(v.checks.map((c) => c.name)).toEqual(["runner_record_is_this_turn"]);
  });

  it("fails a turn the runner killed at its budget with agent_turn_timeout (owner agent, Retry), whatever its exit code", () => {
    const v = judgeTurnResult(turnResult({ expectedSeq: 2, budgetMs: 1000, record: { seq: 2, exitCode: 124, timedOut: true, durationMs: 3012 } }));
    expect(v).toMatchObject({ verdict: "turn_failed", code: "agent_turn_timeout", reason: "turn_timed_out", owner: "agent", canRetry: true, outcome: "terminal_failure" });
    expect(v.checks).toEqual([
      { name: "runner_record_is_this_turn", ok: true, expected: 2, actual: 2 },
      { name: "agent_command_within_budget", ok: false, expected: 1000, actual: 3012 },
    ]);
    expect(verdictSchema.parse(v)).toEqual(v);
    // Even an exit 0 after the budget is a timeout: the runner's flag decides, not the code.
    expect(judgeTurnResult(turnResult({ budgetMs: 1000, record: { seq: 2, exitCode: 0, timedOut: true } }))).toMatchObject({ code: "agent_turn_timeout" });
    expect(failureEntry("agent_turn_timeout")).toMatchObject({ owner: "agent", canRetry: true, outcome: "terminal_failure" });
  });

  it("fails a turn the runner gave no record of within the controller's deadline with agent_turn_timeout", () => {
    const v = judgeTurnResult(turnResult({ budgetMs: 1000, record: null, deadline: { deadlineMs: 31_000, waitedMs: 31_004 } }));
    expect(v).toMatchObject({ verdict: "turn_failed", code: "agent_turn_timeout", reason: "no_record_within_deadline", owner: "agent", canRetry: true });
    expect(v.checks).toEqual([{ name: "runner_record_within_deadline", ok: false, expected: 31_000, actual: 31_004 }]);
    expect(verdictSchema.parse(v)).toEqual(v);
  });

  it("passes a turn within its budget, with the budget check among its checks; a record without the flag (an older runner) is judged as before", () => {
    const v = judgeTurnResult(turnResult({ budgetMs: 1000, record: { seq: 2, exitCode: 0, timedOut: false, durationMs: 12 } }));
    expect(v).toMatchObject({ verdict: "turn_succeeded", code: null });
    expect(v.checks.map((c) => [c.name, c.ok])).toEqual([
      ["runner_record_is_this_turn", true],
      ["agent_command_within_budget", true],
      ["agent_command_exit_code", true],
    ]);
    expect(judgeTurnResult(turnResult()).checks.map((c) => c.name)).toEqual(["runner_record_is_this_turn", "agent_command_exit_code"]);
  });

  it("is a kind of decide", () => {
    expect(decide({ kind: "turn_result", expectedSeq: 1, record: { seq: 1, exitCode: 2 } })).toMatchObject({ verdict: "turn_failed" });
  });
});
