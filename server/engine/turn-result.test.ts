import { describe, expect, it } from "vitest";
import { failureEntry } from "./catalogue";
import { decide } from "./decide";
import { judgeTurnResult } from "./turn-result";
import { turnResult } from "../test/evidence";
import { verdictSchema } from "./verdicts";

describe("turn_result (issue 12 item 1)", () => {
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

  it("is a kind of decide", () => {
    expect(decide({ kind: "turn_result", expectedSeq: 1, record: { seq: 1, exitCode: 2 } })).toMatchObject({ verdict: "turn_failed" });
  });
});
