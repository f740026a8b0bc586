import { describe, expect, test } from "vitest";
import { decide, EvidenceError, parseEvidence, safeDecide, verdictSchema } from "./index";
import bootstrapConnected from "./fixtures/bootstrap-restart-connected.json";
import bootstrapNeverConnected from "./fixtures/bootstrap-restart-never-connected.json";
import creationExited from "./fixtures/creation-intent-creator-exited.json";
import leaseReplacement from "./fixtures/lease-binding-replacement.json";
import leaseCreated from "./fixtures/lease-binding-staged-created.json";
import pidRecycled from "./fixtures/process-exit-pid-recycled.json";
import sameProcess from "./fixtures/process-exit-same-process.json";
import startupLocal from "./fixtures/startup-failure-local-transient.json";
import startupRemote from "./fixtures/startup-failure-remote-permission.json";
import fenceExited from "./fixtures/teardown-fence-claimer-exited.json";
import fenceSuperseded from "./fixtures/teardown-fence-superseded.json";
import ownershipOwned from "./fixtures/sandbox-ownership-owned.json";
import ownershipUnrecorded from "./fixtures/sandbox-ownership-unrecorded.json";
import turnFailed from "./fixtures/turn-result-agent-failed.json";
import attemptsExhausted from "./fixtures/recovery-attempt-exhausted.json";
import routeReadRunner from "./fixtures/recovery-route-read-runner.json";
import routeTurnSandboxStopped from "./fixtures/recovery-route-turn-sandbox-stopped.json";
import { bootstrapRestart, creationIntent, leaseBinding, processExit, recoveryAttempt, recoveryRoute, startupFailure, teardownFence, turnResult } from "../test/evidence";

const KINDS =
  "lease_binding, bootstrap_restart, startup_failure, process_exit, creation_intent, teardown_fence, sandbox_ownership, turn_result, recovery_attempt, recovery_route, stopped_sandbox, runner_resume";

describe("decide on the docs/evidence.md examples (fixtures)", () => {
  test.each([
    { name: "lease_binding, created lease", bundle: leaseCreated, expected: { verdict: "admitted", code: null } },
    { name: "lease_binding, replacement", bundle: leaseReplacement, expected: { verdict: "refused", code: "native_remote_recovery_lease_mismatch" } },
    { name: "bootstrap_restart, never connected", bundle: bootstrapNeverConnected, expected: { verdict: "restart_bootstrap", code: null } },
    { name: "bootstrap_restart, connected", bundle: bootstrapConnected, expected: { verdict: "refused", code: "runner_harness_state_mismatch: resumed_unavailable" } },
    { name: "startup_failure, remote permission", bundle: startupRemote, expected: { verdict: "terminal_failure", code: "native_provider_startup_rejected", canRetry: true, owner: "board" } },
    { name: "startup_failure, local transient", bundle: startupLocal, expected: { verdict: "retryable_failure", code: "native_session_interrupted", retryAfterSeconds: 30 } },
    { name: "process_exit, same process", bundle: sameProcess, expected: { verdict: "alive", reason: "same_process" } },
    { name: "process_exit, pid recycled", bundle: pidRecycled, expected: { verdict: "exited", reason: "pid_recycled" } },
    { name: "creation_intent, creator exited", bundle: creationExited, expected: { verdict: "reclaim" } },
    { name: "teardown_fence, superseded", bundle: fenceSuperseded, expected: { verdict: "keep", reason: "attempt_superseded" } },
    { name: "teardown_fence, claimer exited", bundle: fenceExited, expected: { verdict: "release", reason: "claimer_exited" } },
    { name: "sandbox_ownership, owned", bundle: ownershipOwned, expected: { verdict: "owned", reason: "record_matches" } },
    { name: "sandbox_ownership, only another instance's record", bundle: ownershipUnrecorded, expected: { verdict: "unrecorded", reason: "no_record" } },
    { name: "turn_result, agent command failed", bundle: turnFailed, expected: { verdict: "turn_failed", code: "agent_command_failed", owner: "agent", canRetry: true } },
    { name: "recovery_attempt, exhausted", bundle: attemptsExhausted, expected: { verdict: "give_up", code: "native_recovery_attempts_exhausted", canRetry: true } },
    { name: "recovery_route, bootstrapping on a sandbox", bundle: routeReadRunner, expected: { verdict: "read_runner", code: null } },
    { name: "recovery_route, a per-turn sandbox whose runner was stopped after its turn", bundle: routeTurnSandboxStopped, expected: { verdict: "next_turn_sandbox", reason: "turn_sandbox_stopped" } },
  ])("$name", ({ bundle, expected }) => {
    const v = decide(bundle);
    expect(v).toMatchObject(expected);
    expect(verdictSchema.parse(v)).toEqual(v);
  });
});

describe("bundle validation names the first bad field", () => {
  const lease = leaseBinding();
  test.each<{ name: string; bundle: unknown; message: string }>([
    {
      name: "wrong type deep inside",
      bundle: { ...lease, claim: { ...lease.claim, remote: { ...lease.claim.remote, providerLeaseId: 42 } } },
      message: "evidence.claim.remote.providerLeaseId: expected string",
    },
    { name: "missing field", bundle: { ...lease, claim: { runId: "r1" } }, message: "evidence.claim.remote: expected object (missing)" },
    { name: "unknown kind", bundle: { kind: "lease_bindings" }, message: `evidence.kind: expected one of ${KINDS} (got "lease_bindings")` },
    { name: "missing kind", bundle: { path: "remote_reattach" }, message: `evidence.kind: expected one of ${KINDS} (missing)` },
    { name: "kind of the wrong type", bundle: { kind: 7 }, message: `evidence.kind: expected one of ${KINDS} (got 7)` },
    { name: "not an object", bundle: "lease_binding", message: "evidence: expected object" },
    { name: "null", bundle: null, message: "evidence: expected object" },
    { name: "an array", bundle: [lease], message: "evidence: expected object" },
    { name: "undefined", bundle: undefined, message: "evidence: expected object (missing)" },
    { name: "enum value", bundle: { ...lease, path: "reattach" }, message: 'evidence.path: expected one of staged_attachment, remote_reattach (got "reattach")' },
    {
      name: "acquisition outcome",
      bundle: { ...lease, target: { ...lease.target, acquisitionOutcome: "reused" } },
      message: 'evidence.target.acquisitionOutcome: expected one of created, resumed, replacement (got "reused")',
    },
    { name: "empty id", bundle: { ...lease, target: { ...lease.target, runId: "" } }, message: "evidence.target.runId: expected a non-empty string" },
    { name: "not a time", bundle: { ...teardownFence(), now: "yesterday" }, message: "evidence.now: expected an ISO-8601 time with a time zone" },
    { name: "time without zone", bundle: { ...teardownFence(), now: "2026-11-12T00:28:11" }, message: "evidence.now: expected an ISO-8601 time with a time zone" },
    { name: "fence left out", bundle: { ...teardownFence(), lease: { status: "pending_cleanup", claimAttemptId: "att-1" } }, message: "evidence.lease.fencedUntil: expected string (missing)" },
    { name: "non-integer attempt", bundle: { ...startupFailure(), attempt: 1.5 }, message: "evidence.attempt: expected integer" },
    { name: "attempt zero", bundle: { ...startupFailure(), attempt: 0 }, message: "evidence.attempt: expected a number > 0" },
    { name: "another phase", bundle: { ...startupFailure(), phase: "turn.start" }, message: 'evidence.phase: expected one of session.open (got "turn.start")' },
    { name: "negative pid", bundle: { ...processExit(), observer: { ...processExit().observer, pid: -1 } }, message: "evidence.observer.pid: expected a number > 0" },
    {
      name: "protocol version of the wrong type",
      bundle: { ...bootstrapRestart(), runnerState: { ...bootstrapRestart().runnerState, lastConnectionProtocolVersion: true } },
      message: "evidence.runnerState.lastConnectionProtocolVersion: expected string or number",
    },
    { name: "array element path", bundle: { ...bootstrapRestart(), runnerState: { ...bootstrapRestart().runnerState, outbox: "none" } }, message: "evidence.runnerState.outbox: expected array" },
    { name: "inspection found flag", bundle: { ...creationIntent(), inspection: { found: "yes" } }, message: 'evidence.inspection.found: expected one of true, false (got "yes")' },
    { name: "found without sandbox", bundle: { ...creationIntent(), inspection: { found: true } }, message: "evidence.inspection.sandbox: expected object (missing)" },
    { name: "intent not pending", bundle: { ...creationIntent(), intent: { ...creationIntent().intent, status: "committed" } }, message: 'evidence.intent.status: expected one of pending (got "committed")' },
  ])("$name", ({ bundle, message }) => {
    const r = safeDecide(bundle);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error).toBeInstanceOf(EvidenceError);
    expect(r.error.message).toBe(message);
    expect(r.error.field).toBe(message.slice(0, message.indexOf(": ")));
    expect(() => decide(bundle)).toThrow(EvidenceError);
    expect(() => decide(bundle)).toThrow(message);
  });

  test("the first bad field in schema order is the one named", () => {
    const r = parseEvidence({ ...leaseBinding(), claim: { runId: 1 }, target: 2 });
    expect(r.ok ? null : r.error.message).toBe("evidence.claim.runId: expected string");
  });
});

describe("contract details", () => {
  test("unknown extra fields are ignored, not rejected", () => {
    const bundle = { ...leaseBinding(), exportedBy: "op-7", claim: { ...leaseBinding().claim, note: "x", remote: { ...leaseBinding().claim.remote, region: "eu" } } };
    const r = parseEvidence(bundle);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.evidence).toEqual(leaseBinding());
    expect(decide(bundle)).toEqual(decide(leaseBinding()));
  });

  test("maxAttempts defaults to 3 provider attempts", () => {
    const { maxAttempts: _omit, ...bundle } = startupFailure({ target: "local", providerFailure: null, attempt: 3 });
    expect(decide(bundle)).toMatchObject({ code: "native_session_retry_exhausted" });
    expect(decide({ ...bundle, attempt: 2 })).toMatchObject({ code: "native_session_interrupted" });
  });

  test("safeDecide returns the verdict on success", () => {
    const r = safeDecide(processExit());
    expect(r).toEqual({ ok: true, verdict: decide(processExit()) });
  });

  test("an EvidenceError serialises with its field", () => {
    const r = safeDecide({ kind: "process_exit" });
    expect(r.ok ? null : JSON.parse(JSON.stringify(r.error))).toEqual({
      name: "EvidenceError",
      field: "evidence.observer",
      problem: "expected object (missing)",
      message: "evidence.observer: expected object (missing)",
    });
  });

  test("every verdict has kind, verdict, code, reason and checks", () => {
    for (const bundle of [leaseBinding(), bootstrapRestart(), startupFailure(), processExit(), creationIntent(), teardownFence(), turnResult(), recoveryAttempt(), recoveryRoute()]) {
      const v = decide(bundle);
      expect(Object.keys(v).slice(0, 5)).toEqual(["kind", "verdict", "code", "reason", "checks"]);
      expect(v.kind).toBe(bundle.kind);
      expect(v.checks.length).toBeGreaterThan(0);
    }
  });
});
