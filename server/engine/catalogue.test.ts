import { describe, expect, test } from "vitest";
import { describeFailure, FAILURE_CATALOGUE, FAILURE_CODES, failureEntry, failureFields, isFailureCode } from "./catalogue";

const REQUIRED = [
  "native_session_interrupted",
  "native_session_retry_exhausted",
  "native_provider_startup_rejected",
  "native_runner_staged_attachment_recovery_unproven",
  "native_remote_recovery_lease_mismatch",
  "native_continuation_requires_reconciliation",
  "runner_harness_state_mismatch: resumed_unavailable",
  "runner_harness_state_mismatch: resumed_not_suspended",
  "runner_ingress_bind_conflict",
  "native_restart_recovery_blocked",
  "ambiguous_remote_recovery_evidence",
];

describe("failure catalogue (docs/rules.md §3)", () => {
  test("holds every code docs/rules.md lists", () => {
    expect([...FAILURE_CODES].sort()).toEqual(expect.arrayContaining([...REQUIRED].sort()));
    for (const code of REQUIRED) expect(isFailureCode(code)).toBe(true);
  });

  test.each(FAILURE_CODES)("%s reads as plain words with one next action", (code) => {
    const row = failureEntry(code);
    expect(row.message).toMatch(/^[A-Z].*\.$/);
    expect(row.nextAction.length).toBeGreaterThan(10);
    // No codes or jargon identifiers in what a board user reads.
    for (const text of [row.message, row.nextAction]) expect(text).not.toMatch(/[a-z]+_[a-z]+/);
  });

  test.each(FAILURE_CODES)("%s: a retryable failure belongs to the agent and offers no Retry; a terminal one belongs to the board", (code) => {
    const row = FAILURE_CATALOGUE[code];
    if (row.outcome === "retryable_failure") expect([row.owner, row.canRetry]).toEqual(["agent", false]);
    // A failing agent command and a turn past its budget (docs/rules.md, "Turns") are the terminal failures the agent owns.
    else expect(row.owner).toBe(code === "agent_command_failed" || code === "agent_turn_timeout" ? "agent" : "board");
    // Retry is only ever offered with a next action that says so, and vice versa.
    expect(row.nextAction.includes("Retry")).toBe(row.canRetry);
  });

  test("the startup rejection's next action is the one docs/rules.md gives", () => {
    expect(describeFailure("native_provider_startup_rejected")).toMatchObject({
      known: true,
      outcome: "terminal_failure",
      owner: "board",
      canRetry: true,
      nextAction: "The provider refused to start the session: fix the credentials, then Retry",
    });
  });

  test.each([
    ["native_session_interrupted", "retryable_failure", "agent", false],
    ["native_session_retry_exhausted", "terminal_failure", "board", true],
    ["native_continuation_requires_reconciliation", "terminal_failure", "board", true],
    ["runner_harness_state_mismatch: resumed_unavailable", "terminal_failure", "board", true],
    ["runner_ingress_bind_conflict", "retryable_failure", "agent", false],
    ["ambiguous_remote_recovery_evidence", "terminal_failure", "board", false],
    ["agent_turn_timeout", "terminal_failure", "agent", true],
  ] as const)("%s → %s, owner %s, Retry %s", (code, outcome, owner, canRetry) => {
    expect(describeFailure(code)).toMatchObject({ code, outcome, owner, canRetry, known: true });
  });

  test("an unknown code fails closed: no Retry, an operator looks", () => {
    const d = describeFailure("runner_harness_state_mismatch: something_new");
    expect(d).toMatchObject({ known: false, outcome: "terminal_failure", owner: "board", canRetry: false });
    expect(d?.message).toContain("runner_harness_state_mismatch: something_new");
    expect(describeFailure("")).toMatchObject({ known: false, canRetry: false });
    expect(describeFailure("toString")).toMatchObject({ known: false });
  });

  test("no code, no description", () => {
    expect(describeFailure(null)).toBeNull();
    expect(describeFailure(undefined)).toBeNull();
    expect(failureFields(null)).toEqual({ outcome: null, owner: null, canRetry: false, message: null, nextAction: null });
  });

  test("surrounding whitespace is tolerated", () => {
    expect(describeFailure(" native_session_interrupted ")).toMatchObject({ known: true, code: "native_session_interrupted" });
  });
});
