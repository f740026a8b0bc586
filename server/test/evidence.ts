import type { WalkRunnerState } from "../engine/recovery-walk";
import type {
  BootstrapRestartEvidence,
  CreationIntentEvidence,
  Identity,
  LeaseBindingEvidence,
  ProcessExitEvidence,
  RecoveryAttemptEvidence,
  RecoveryRouteEvidence,
  RunnerState,
  StartupFailureEvidence,
  SandboxOwnershipEvidence,
  TeardownFenceEvidence,
  TurnResultEvidence,
} from "../engine/schemas";

/** Well-formed evidence for tests, each one the "everything fine" case of its kind. */

export const T0 = "2026-11-12T00:28:11.000Z";

/** `base` shifted by `ms` milliseconds, as ISO. */
export function plus(base: string, ms: number): string {
  return new Date(Date.parse(base) + ms).toISOString();
}

export const MIN = 60_000;

export function identity(over: Partial<Identity> = {}): Identity {
  return { bootId: "b-1", pid: 4242, startedAt: T0, pidSpace: "ps-9f3a", ...over };
}

export function observer(over: Partial<Identity> = {}): Identity {
  return { bootId: "b-2", pid: 5151, startedAt: plus(T0, 40 * MIN), pidSpace: "ps-9f3a", ...over };
}

export function leaseBinding(over: Partial<LeaseBindingEvidence> = {}): LeaseBindingEvidence {
  return {
    kind: "lease_binding",
    path: "staged_attachment",
    claim: { runId: "r1", remote: { providerLeaseId: "sbx-1", remoteCwd: "/home/sandbox/work" } },
    target: { runId: "r1", providerLeaseId: "sbx-1", remoteCwd: "/home/sandbox/work", acquisitionOutcome: "created" },
    staged: { headerReadable: true, sourceRunMatches: true, templateDigestMatches: true, runnerIdentityMatches: true },
    ...over,
  };
}

export function runnerState(over: Partial<RunnerState> = {}): RunnerState {
  return {
    runId: "r1",
    runnerInstanceId: "ri-1",
    sessionId: "s-1",
    lifecycle: "connecting",
    lastConnectionProtocolVersion: null,
    lastControllerCommandSeq: 0,
    reconnectCount: 0,
    outbox: [],
    processedCommands: [],
    pendingTerminalDelivery: null,
    ...over,
  };
}

export function bootstrapRestart(over: Partial<BootstrapRestartEvidence> = {}): BootstrapRestartEvidence {
  return {
    kind: "bootstrap_restart",
    acquisitionOutcome: "resumed",
    run: { id: "r1", runnerInstanceId: "ri-1", sessionId: "s-1" },
    claim: { kind: "bootstrap_incomplete", runId: "r1", runnerInstanceId: "ri-1", sessionId: "s-1" },
    localProof: null,
    runnerState: runnerState(),
    providerStatePresent: false,
    failoverBackup: false,
    archivedRotationSnapshot: false,
    runnerProcess: "absent",
    ...over,
  };
}

export function startupFailure(over: Partial<StartupFailureEvidence> = {}): StartupFailureEvidence {
  return {
    kind: "startup_failure",
    target: "remote",
    phase: "session.open",
    definite: true,
    providerFailure: { kind: "requires_action", category: "permission", message: "bwrap: loopback: Failed RTM_NEWADDR" },
    attempt: 1,
    maxAttempts: 3,
    bindConflict: false,
    ...over,
  };
}

export function processExit(over: Partial<ProcessExitEvidence> = {}): ProcessExitEvidence {
  return {
    kind: "process_exit",
    record: identity(),
    observer: observer(),
    probe: { readable: true, pidLive: true, liveStartedAt: T0 },
    ...over,
  };
}

/** An intent created at T0, due at +30 min, settling at +5 min; `now` is T0 + 10 min. */
export function creationIntent(
  over: Partial<Omit<CreationIntentEvidence, "intent">> & { intent?: Partial<CreationIntentEvidence["intent"]> } = {},
): CreationIntentEvidence {
  const { intent, ...rest } = over;
  return {
    kind: "creation_intent",
    now: plus(T0, 10 * MIN),
    intent: {
      id: "op-1",
      instanceId: "inst-a",
      companyId: "co-1",
      status: "pending",
      creationName: "rw-create-op-1",
      createdAt: T0,
      nextAttemptAt: plus(T0, 30 * MIN),
      settleDeadline: plus(T0, 5 * MIN),
      creator: identity({ startedAt: plus(T0, -5 * MIN) }),
      ...intent,
    },
    observer: observer(),
    creatorProbe: { readable: true, pidLive: false, liveStartedAt: null },
    committedLease: false,
    inspection: {
      found: true,
      sandbox: { name: "rw-create-op-1", labels: { instance: "inst-a", company: "co-1", operation: "op-1" } },
    },
    ...rest,
  };
}

/** A claim fenced until T0 + 15 min, looked at at T0 + 5 min, claimer gone. */
export function teardownFence(
  over: Partial<Omit<TeardownFenceEvidence, "lease">> & { lease?: Partial<TeardownFenceEvidence["lease"]> } = {},
): TeardownFenceEvidence {
  const { lease, ...rest } = over;
  return {
    kind: "teardown_fence",
    now: plus(T0, 5 * MIN),
    lease: { status: "pending_cleanup", claimAttemptId: "att-1", fencedUntil: plus(T0, 15 * MIN), ...lease },
    claimRecord: { attemptId: "att-1", claimer: identity({ startedAt: plus(T0, -5 * MIN) }) },
    observer: observer(),
    claimerProbe: { readable: true, pidLive: false, liveStartedAt: null },
    ...rest,
  };
}

/** A sandbox this instance created through intent op-1 and leased as l-1: owned. */
export function sandboxOwnership(over: Partial<SandboxOwnershipEvidence> = {}): SandboxOwnershipEvidence {
  return {
    kind: "sandbox_ownership",
    instanceId: "inst-a",
    sandbox: { id: "sbx-1", name: "rw-create-op-1", labels: { instance: "inst-a", company: "co-1", operation: "op-1" } },
    records: [
      { type: "intent", id: "op-1", instanceId: "inst-a", companyId: "co-1", creationName: "rw-create-op-1" },
      { type: "lease", id: "l-1", instanceId: "inst-a", companyId: "co-1", providerLeaseId: "sbx-1", sandboxName: "rw-create-op-1", operationId: "op-1" },
    ],
    ...over,
  };
}

export function turnResult(over: Partial<TurnResultEvidence> = {}): TurnResultEvidence {
  return { kind: "turn_result", expectedSeq: 2, record: { seq: 2, exitCode: 0 }, ...over };
}

export function recoveryAttempt(over: Partial<RecoveryAttemptEvidence> = {}): RecoveryAttemptEvidence {
  return { kind: "recovery_attempt", now: T0, attempts: 1, maxAttempts: 5, backoffBaseMs: 2_000, lastError: "provider unreachable", errors: [], ...over };
}

export function recoveryRoute(over: Partial<RecoveryRouteEvidence> = {}): RecoveryRouteEvidence {
  return { kind: "recovery_route", phase: "session_open", sandboxMode: "warm", turnsDone: 1, sandboxBound: true, runner: null, ...over };
}

/**
 * runner-state.json as the recovery walk reads it (engine/recovery-walk.ts), for run `run-1`,
 * runner `ri-1`, session `s-1`, in session in `/home/sandbox/work` on program `digest-1`: one
 * processed turn, no turn in flight. The walk's and the forecast's tests start from it.
 */
export function walkRunnerState(over: Partial<WalkRunnerState> = {}): WalkRunnerState {
  return {
    runId: "run-1",
    runnerInstanceId: "ri-1",
    sessionId: "s-1",
    lifecycle: "ready",
    lastConnectionProtocolVersion: 1,
    lastControllerCommandSeq: 2,
    reconnectCount: 0,
    outbox: [],
    processedCommands: [{ seq: 1 }],
    pendingTerminalDelivery: null,
    providerStatePresent: true,
    inFlightSeq: null,
    lastProcessedSeq: 1,
    workDir: "/home/sandbox/work",
    programDigest: "digest-1",
    ...over,
  };
}
