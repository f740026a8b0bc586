import { describe, expect, it } from "vitest";
import { judgeEvidence, parseEvidence } from "./decide";
import { describeFailure } from "./catalogue";
import { restingCode, restingFailure, RUN_DECIDING_KINDS } from "./resting-code";
import {
  bootstrapRestart,
  creationIntent,
  leaseBinding,
  processExit,
  recoveryAttempt,
  recoveryRoute,
  startupFailure,
  teardownFence,
  turnResult,
} from "../test/evidence";
import type { EvidenceInput } from "./schemas";
import bootstrapConnected from "./fixtures/bootstrap-restart-connected.json";

const verdictOf = (bundle: EvidenceInput) => {
  const parsed = parseEvidence(bundle);
  if (!parsed.ok) throw parsed.error;
  return judgeEvidence(parsed.evidence);
};

describe("restingFailure (the run says what its proof says)", () => {
  it.each<{ name: string; bundle: EvidenceInput; code: string | null }>([
    { name: "lease binding admitted", bundle: leaseBinding(), code: null },
    {
      name: "lease binding refused → its continuation, not the refusal code",
      bundle: leaseBinding({ target: { ...leaseBinding().target, acquisitionOutcome: "replacement" } }),
      code: "native_continuation_requires_reconciliation",
    },
    { name: "bootstrap restart admitted", bundle: bootstrapRestart(), code: null },
    { name: "bootstrap restart refused", bundle: bootstrapConnected as EvidenceInput, code: "runner_harness_state_mismatch: resumed_unavailable" },
    { name: "startup rejected", bundle: startupFailure(), code: "native_provider_startup_rejected" },
    { name: "startup bind conflict", bundle: startupFailure({ target: "local", definite: false, providerFailure: null, bindConflict: true }), code: "runner_ingress_bind_conflict" },
    { name: "turn failed", bundle: turnResult({ record: { seq: 2, exitCode: 1 } }), code: "agent_command_failed" },
    { name: "turn succeeded", bundle: turnResult(), code: null },
    { name: "turn past its budget", bundle: turnResult({ budgetMs: 1000, record: { seq: 2, exitCode: 124, timedOut: true } }), code: "agent_turn_timeout" },
    { name: "turn without a record by the deadline", bundle: turnResult({ record: null, deadline: { deadlineMs: 31_000, waitedMs: 31_000 } }), code: "agent_turn_timeout" },
    { name: "recovery attempts left", bundle: recoveryAttempt(), code: null },
    { name: "recovery attempts spent", bundle: recoveryAttempt({ attempts: 5 }), code: "native_recovery_attempts_exhausted" },
    { name: "route refused", bundle: recoveryRoute({ sandboxBound: false }), code: "native_continuation_requires_reconciliation" },
    { name: "route onward", bundle: recoveryRoute(), code: null },
    { name: "process exit decides no run", bundle: processExit(), code: null },
    { name: "creation intent decides no run", bundle: creationIntent(), code: null },
    { name: "teardown fence decides no run", bundle: teardownFence(), code: null },
  ])("$name → $code", ({ bundle, code }) => {
    const v = verdictOf(bundle);
    expect(restingCode(v)).toBe(code);
    const rest = restingFailure(v);
    if (rest) {
      // Everything the run row carries comes from the catalogue row of that code.
      const row = describeFailure(rest.code)!;
      expect(rest).toEqual({ code: rest.code, outcome: row.outcome, owner: row.owner, canRetry: row.canRetry, message: row.message, nextAction: row.nextAction });
    }
  });

  it("names the run-deciding kinds", () => {
    expect([...RUN_DECIDING_KINDS].sort()).toEqual(["bootstrap_restart", "lease_binding", "recovery_attempt", "recovery_route", "runner_resume", "startup_failure", "stopped_sandbox", "turn_result"]);
  });
});
