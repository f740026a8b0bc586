import { failureFields, type FailureCode } from "./catalogue";
import { assertNever, check } from "./checks";
import type { BootstrapRestartEvidence, RunnerState } from "./schemas";
import type { BootstrapRestartResult, Check } from "./verdicts";

/** The fields of a runner's state the `bootstrap_restart` evidence takes, from any reading that has them (recovery's, the forecast's). */
export function runnerStateEvidence(s: RunnerState): RunnerState {
  return {
    runId: s.runId,
    runnerInstanceId: s.runnerInstanceId,
    sessionId: s.sessionId,
    lifecycle: s.lifecycle,
    lastConnectionProtocolVersion: s.lastConnectionProtocolVersion,
    lastControllerCommandSeq: s.lastControllerCommandSeq,
    reconnectCount: s.reconnectCount,
    outbox: s.outbox,
    processedCommands: s.processedCommands,
    pendingTerminalDelivery: s.pendingTerminalDelivery,
  };
}

/**
 * Refusal code by lease acquisition.
 *
 * - `resumed`: docs/rules.md §2.2 fixes `runner_harness_state_mismatch: resumed_unavailable`,
 *   whatever check failed. `resumed_not_suspended` is not used here even when the lifecycle
 *   is the problem: it names a resume that expected a suspended runner and found another
 *   lifecycle, whereas this proof runs when resuming is not possible at all.
 * - `created` / `replacement`: there is no harness state to resume, so the refusal is a
 *   blocked restart recovery, `native_restart_recovery_blocked` (terminal, Retry). It is not
 *   `ambiguous_remote_recovery_evidence`: a refused bootstrap restart never reached the
 *   provider, so it must end with Retry, not an ownership hold (seed 004).
 */
function refusalCode(outcome: BootstrapRestartEvidence["acquisitionOutcome"]): FailureCode {
  switch (outcome) {
    case "resumed":
      return "runner_harness_state_mismatch: resumed_unavailable";
    case "created":
    case "replacement":
      return "native_restart_recovery_blocked";
    default:
      return assertNever(outcome);
  }
}

/** What in a runner state shows that the runner ever connected; empty when it never did. */
export function connectionTraces(s: RunnerState): string[] {
  const traces: string[] = [];
  if (s.lastConnectionProtocolVersion !== null) traces.push(`lastConnectionProtocolVersion=${s.lastConnectionProtocolVersion}`);
  if (s.lastControllerCommandSeq !== 0) traces.push(`lastControllerCommandSeq=${s.lastControllerCommandSeq}`);
  if (s.reconnectCount !== 0) traces.push(`reconnectCount=${s.reconnectCount}`);
  if (s.outbox.length > 0) traces.push(`outbox has ${s.outbox.length}`);
  if (s.processedCommands.length > 0) traces.push(`processedCommands has ${s.processedCommands.length}`);
  // A missing field is not proof that nothing is pending.
  if (s.pendingTerminalDelivery === undefined) traces.push("pendingTerminalDelivery not recorded");
  else if (s.pendingTerminalDelivery !== null && s.pendingTerminalDelivery !== false) traces.push("pendingTerminalDelivery set");
  return traces;
}

/**
 * May the controller restart a `bootstrap_incomplete` run's bootstrap on the same sandbox,
 * from the sandbox's own runner state? docs/rules.md §2.2. All checks are required; all are
 * evaluated and listed.
 */
export function judgeBootstrapRestart(e: BootstrapRestartEvidence): BootstrapRestartResult {
  const { run, claim } = e;
  const state = e.runnerState ?? null;
  const localProof = e.localProof ?? null;
  const noState = "no runner state";
  const traces = state ? connectionTraces(state) : [];
  const neverConnected = state !== null && traces.length === 0;

  const evaluated: { check: Check; reason: string }[] = [
    // 1. The claim is this run's, for the same runner instance and session.
    { check: check("claim_kind", claim.kind === "bootstrap_incomplete", "bootstrap_incomplete", claim.kind), reason: "not_bootstrap_claim" },
    { check: check("claim_run", claim.runId === run.id, run.id, claim.runId), reason: "claim_run_mismatch" },
    {
      check: check("claim_runner_instance", claim.runnerInstanceId === run.runnerInstanceId, run.runnerInstanceId, claim.runnerInstanceId),
      reason: "claim_runner_instance_mismatch",
    },
    { check: check("claim_session", claim.sessionId === run.sessionId, run.sessionId, claim.sessionId), reason: "claim_session_mismatch" },
    // 2. The runner state exists and names the same run, runner instance and session.
    { check: check("runner_state_present", state !== null, "present", state ? "present" : "absent"), reason: "runner_state_missing" },
    { check: check("state_run", state?.runId === run.id, run.id, state?.runId ?? noState), reason: "runner_state_run_mismatch" },
    {
      check: check(
        "state_runner_instance",
        state?.runnerInstanceId === run.runnerInstanceId,
        run.runnerInstanceId,
        state?.runnerInstanceId ?? noState,
      ),
      reason: "runner_state_runner_instance_mismatch",
    },
    {
      check: check("state_session", state?.sessionId === run.sessionId, run.sessionId, state?.sessionId ?? noState),
      reason: "runner_state_session_mismatch",
    },
    // 3. A suspended runner is resumed, never re-bootstrapped.
    {
      check: check("lifecycle_not_suspended", state !== null && state.lifecycle !== "suspended", "not suspended", state?.lifecycle ?? noState),
      reason: "runner_suspended",
    },
    // 4. Nothing reached the provider, and nothing else can restore the session.
    { check: check("no_provider_state", !e.providerStatePresent, false, e.providerStatePresent), reason: "provider_state_present" },
    { check: check("no_failover_backup", !e.failoverBackup, false, e.failoverBackup), reason: "failover_backup_present" },
    {
      check: check("no_archived_rotation_snapshot", !e.archivedRotationSnapshot, false, e.archivedRotationSnapshot),
      reason: "rotation_snapshot_present",
    },
    // 5. A local restart proof, or a runner that provably never connected (seed 001).
    {
      check: check(
        "local_proof_or_never_connected",
        localProof !== null || neverConnected,
        "a local restart proof, or a runner that never connected",
        localProof !== null
          ? `local proof recorded at ${localProof.recordedAt}`
          : state === null
            ? noState
            : neverConnected
              ? "never connected"
              : `no local proof; connected: ${traces.join(", ")}`,
      ),
      reason: state === null ? "runner_state_missing" : "runner_connected",
    },
    // 6. That exact runner process is stopped or proven absent.
    {
      check: check(
        "runner_process_stopped",
        e.runnerProcess === "stopped" || e.runnerProcess === "absent",
        "stopped or absent",
        e.runnerProcess,
      ),
      reason: "runner_stop_unproven",
    },
  ];

  const checks = evaluated.map((x) => x.check);
  const firstFailure = evaluated.find((x) => !x.check.ok);
  if (!firstFailure) {
    return {
      kind: "bootstrap_restart",
      verdict: "restart_bootstrap",
      code: null,
      reason: localProof !== null ? "local_proof" : "never_connected",
      checks,
      ...failureFields(null),
      proofSource: localProof !== null ? "local_proof" : "never_connected",
      moveRunnerRootAside: true,
    };
  }
  const code = refusalCode(e.acquisitionOutcome);
  return {
    kind: "bootstrap_restart",
    verdict: "refused",
    code,
    reason: firstFailure.reason,
    checks,
    ...failureFields(code),
    proofSource: null,
    moveRunnerRootAside: false,
  };
}
