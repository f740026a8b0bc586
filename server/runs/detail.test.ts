import { describe, expect, it } from "vitest";
import type { Proof } from "../db/client";
import { FAILURE_CATALOGUE } from "../engine";
import { proofToView } from "./detail";

/** A proof is shown exactly as recorded (docs/rules.md §1 "Proof"): never re-described from today's catalogue. */

function proof(output: unknown, code: string | null): Proof {
  return {
    id: "p-1",
    kind: "startup_failure",
    verdict: "retryable_failure",
    code,
    reason: "transient",
    checks: [{ name: "definite", ok: false, expected: true, actual: false }],
    evidence: {},
    output: output as Proof["output"],
    runId: null,
    claimId: null,
    intentId: null,
    leaseId: null,
    sandboxId: null,
    evaluatedBy: "b-1",
    evaluatedAt: new Date("2026-11-12T00:00:00.000Z"),
  };
}

describe("proofToView", () => {
  it("shows the stored verdict's outcome, owner, Retry and sentences, even when the catalogue says otherwise today", () => {
    const recorded = {
      kind: "startup_failure",
      verdict: "retryable_failure",
      code: "native_session_interrupted",
      outcome: "retryable_failure",
      owner: "agent",
      canRetry: false,
      message: "The sentence of the release that recorded it.",
      nextAction: "What that release said to do",
    };
    expect(FAILURE_CATALOGUE.native_session_interrupted.message).not.toBe(recorded.message);
    const view = proofToView(proof(recorded, "native_session_interrupted"));
    expect(view.failure).toMatchObject({ code: "native_session_interrupted", outcome: "retryable_failure", owner: "agent", canRetry: false, message: recorded.message, nextAction: recorded.nextAction });
  });

  it("a stored verdict without those fields is not filled in from the catalogue", () => {
    const view = proofToView(proof({ kind: "startup_failure", verdict: "retryable_failure", code: "native_session_interrupted" }, "native_session_interrupted"));
    expect(view.failure?.message).not.toBe(FAILURE_CATALOGUE.native_session_interrupted.message);
    expect(view.failure).toMatchObject({ code: "native_session_interrupted", known: false, canRetry: false });
  });

  it("a proof without a code shows no failure", () => {
    expect(proofToView(proof({ kind: "process_exit", verdict: "alive", code: null }, null)).failure).toBeNull();
  });
});
