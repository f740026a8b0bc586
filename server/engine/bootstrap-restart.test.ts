import { describe, expect, test } from "vitest";
import { judgeBootstrapRestart } from "./bootstrap-restart";
import type { BootstrapRestartEvidence } from "./schemas";
import { bootstrapRestart, runnerState, T0 } from "../test/evidence";

const CHECK_NAMES = [
  "claim_kind",
  "claim_run",
  "claim_runner_instance",
  "claim_session",
  "runner_state_present",
  "state_run",
  "state_runner_instance",
  "state_session",
  "lifecycle_not_suspended",
  "no_provider_state",
  "no_failover_backup",
  "no_archived_rotation_snapshot",
  "local_proof_or_never_connected",
  "runner_process_stopped",
];

const RESUMED_CODE = "runner_harness_state_mismatch: resumed_unavailable";
const failed = (e: BootstrapRestartEvidence) =>
  judgeBootstrapRestart(e)
    .checks.filter((c) => !c.ok)
    .map((c) => c.name);

describe("bootstrap_restart (docs/rules.md §2.2, seed 001)", () => {
  describe.each(["resumed", "created"] as const)("unprepared, unrecorded bootstrap on a %s lease", (acquisitionOutcome) => {
    test("a runner state that never connected, runner absent → restart_bootstrap", () => {
      const v = judgeBootstrapRestart(bootstrapRestart({ acquisitionOutcome }));
      expect(v).toMatchObject({ verdict: "restart_bootstrap", code: null, reason: "never_connected", proofSource: "never_connected", moveRunnerRootAside: true });
      expect(v.checks.map((c) => c.name)).toEqual(CHECK_NAMES);
      expect(v.checks.every((c) => c.ok)).toBe(true);
    });

    test("runner stopped also proves it", () => {
      expect(judgeBootstrapRestart(bootstrapRestart({ acquisitionOutcome, runnerProcess: "stopped" })).verdict).toBe("restart_bootstrap");
    });

    test("_connected: a runner state that connected, no local proof → refused", () => {
      const e = bootstrapRestart({ acquisitionOutcome, runnerState: runnerState({ lastConnectionProtocolVersion: 3, lastControllerCommandSeq: 2 }) });
      const v = judgeBootstrapRestart(e);
      expect(v.verdict).toBe("refused");
      expect(v.reason).toBe("runner_connected");
      expect(failed(e)).toEqual(["local_proof_or_never_connected"]);
      expect(v.code).toBe(acquisitionOutcome === "resumed" ? RESUMED_CODE : "native_restart_recovery_blocked");
      expect(v).toMatchObject({ outcome: "terminal_failure", owner: "board", canRetry: true, moveRunnerRootAside: false });
    });

    test.each(["running", "unknown"] as const)("_unproven: runner process %s → refused", (runnerProcess) => {
      const e = bootstrapRestart({ acquisitionOutcome, runnerProcess });
      const v = judgeBootstrapRestart(e);
      expect(v.verdict).toBe("refused");
      expect(v.reason).toBe("runner_stop_unproven");
      expect(failed(e)).toEqual(["runner_process_stopped"]);
    });
  });

  test("a replacement lease's refusal carries native_restart_recovery_blocked", () => {
    const v = judgeBootstrapRestart(bootstrapRestart({ acquisitionOutcome: "replacement", runnerProcess: "running" }));
    expect(v.code).toBe("native_restart_recovery_blocked");
  });

  test("a local restart proof admits a runner state that connected", () => {
    const v = judgeBootstrapRestart(
      bootstrapRestart({ localProof: { recordedAt: T0 }, runnerState: runnerState({ lastConnectionProtocolVersion: 3, outbox: [{ seq: 1 }] }) }),
    );
    expect(v).toMatchObject({ verdict: "restart_bootstrap", reason: "local_proof", proofSource: "local_proof" });
  });

  test("a local restart proof does not replace the other checks", () => {
    const e = bootstrapRestart({ localProof: { recordedAt: T0 }, providerStatePresent: true });
    expect(judgeBootstrapRestart(e).verdict).toBe("refused");
    expect(failed(e)).toEqual(["no_provider_state"]);
  });

  // Each line of "never connected" on its own keeps the refusal without a local proof.
  test.each([
    { trace: "lastConnectionProtocolVersion set", state: { lastConnectionProtocolVersion: "1.4" } },
    { trace: "a controller command taken", state: { lastControllerCommandSeq: 1 } },
    { trace: "a reconnect", state: { reconnectCount: 1 } },
    { trace: "outbox data", state: { outbox: [{ seq: 1 }] } },
    { trace: "a processed command", state: { processedCommands: ["c-1"] } },
    { trace: "a pending terminal delivery", state: { pendingTerminalDelivery: { seq: 9 } } },
    { trace: "pendingTerminalDelivery not recorded", state: { pendingTerminalDelivery: undefined } },
  ])("refuses a runner state with $trace", ({ state }) => {
    const e = bootstrapRestart({ runnerState: runnerState(state) });
    const v = judgeBootstrapRestart(e);
    expect(v).toMatchObject({ verdict: "refused", code: RESUMED_CODE, reason: "runner_connected" });
    expect(failed(e)).toEqual(["local_proof_or_never_connected"]);
  });

  test("pendingTerminalDelivery false counts as none", () => {
    expect(judgeBootstrapRestart(bootstrapRestart({ runnerState: runnerState({ pendingTerminalDelivery: false }) })).verdict).toBe(
      "restart_bootstrap",
    );
  });

  test.each<{ name: string; e: BootstrapRestartEvidence; failing: string[]; reason: string }>([
    { name: "a claim of another kind", e: bootstrapRestart({ claim: { ...bootstrapRestart().claim, kind: "resume_dead_runner" } }), failing: ["claim_kind"], reason: "not_bootstrap_claim" },
    { name: "a claim of another run", e: bootstrapRestart({ claim: { ...bootstrapRestart().claim, runId: "r2" } }), failing: ["claim_run"], reason: "claim_run_mismatch" },
    { name: "a claim of another runner instance", e: bootstrapRestart({ claim: { ...bootstrapRestart().claim, runnerInstanceId: "ri-2" } }), failing: ["claim_runner_instance"], reason: "claim_runner_instance_mismatch" },
    { name: "a claim of another session", e: bootstrapRestart({ claim: { ...bootstrapRestart().claim, sessionId: "s-2" } }), failing: ["claim_session"], reason: "claim_session_mismatch" },
    {
      name: "no runner state",
      e: bootstrapRestart({ runnerState: null }),
      failing: ["runner_state_present", "state_run", "state_runner_instance", "state_session", "lifecycle_not_suspended", "local_proof_or_never_connected"],
      reason: "runner_state_missing",
    },
    { name: "a runner state of another run", e: bootstrapRestart({ runnerState: runnerState({ runId: "r2" }) }), failing: ["state_run"], reason: "runner_state_run_mismatch" },
    { name: "a runner state of another runner instance", e: bootstrapRestart({ runnerState: runnerState({ runnerInstanceId: "ri-2" }) }), failing: ["state_runner_instance"], reason: "runner_state_runner_instance_mismatch" },
    { name: "a runner state of another session", e: bootstrapRestart({ runnerState: runnerState({ sessionId: "s-2" }) }), failing: ["state_session"], reason: "runner_state_session_mismatch" },
    { name: "a suspended runner", e: bootstrapRestart({ runnerState: runnerState({ lifecycle: "suspended" }) }), failing: ["lifecycle_not_suspended"], reason: "runner_suspended" },
    { name: "provider state present", e: bootstrapRestart({ providerStatePresent: true }), failing: ["no_provider_state"], reason: "provider_state_present" },
    { name: "a failover backup", e: bootstrapRestart({ failoverBackup: true }), failing: ["no_failover_backup"], reason: "failover_backup_present" },
    { name: "an archived rotation snapshot", e: bootstrapRestart({ archivedRotationSnapshot: true }), failing: ["no_archived_rotation_snapshot"], reason: "rotation_snapshot_present" },
  ])("refuses $name (resumed → resumed_unavailable)", ({ e, failing, reason }) => {
    const v = judgeBootstrapRestart(e);
    expect(v).toMatchObject({ verdict: "refused", code: RESUMED_CODE, reason });
    expect(v.checks.map((c) => c.name)).toEqual(CHECK_NAMES);
    expect(v.checks.filter((c) => !c.ok).map((c) => c.name)).toEqual(failing);
  });

  test.each(["connecting", "ready", "backpressure", "recoverable_failure", "unrecoverable", "stopped", "revoked"] as const)(
    "lifecycle %s is not suspended",
    (lifecycle) => {
      expect(judgeBootstrapRestart(bootstrapRestart({ runnerState: runnerState({ lifecycle }) })).verdict).toBe("restart_bootstrap");
    },
  );
});
