import { describe, expect, it } from "vitest";
import { failureEntry } from "./catalogue";
import { judgeTurn } from "./turn-result";

describe("judgeTurn", () => {
  it("passes a turn whose command exited 0", () => {
    expect(judgeTurn(2, { seq: 2, exitCode: 0 })).toMatchObject({ verdict: "turn_succeeded", code: null });
  });

  it.each([1, 7, 127, null])("fails a turn whose command exited %s with agent_command_failed (owner agent, Retry)", (exitCode) => {
    const j = judgeTurn(1, { seq: 1, exitCode });
    expect(j).toMatchObject({ verdict: "turn_failed", code: "agent_command_failed" });
    expect(j.checks.find((c) => c.name === "agent_command_exit_code")).toMatchObject({ ok: false, actual: exitCode });
    expect(failureEntry("agent_command_failed")).toMatchObject({ owner: "agent", canRetry: true, outcome: "terminal_failure" });
  });

  it("fails a record of another turn", () => {
    expect(judgeTurn(3, { seq: 2, exitCode: 0 }).verdict).toBe("turn_failed");
  });
});
