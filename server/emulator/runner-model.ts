import type { ProviderFailure, RunnerLifecycle, RunnerState, StartRunnerInput } from "../providers/runner";

/**
 * The emulated runner's transitions, as pure functions over its durable state and its
 * process. The server applies them inside a row lock and persists the result.
 */

export type ProcessState = "running" | "stopped" | "absent";

export interface RunnerProcessRow {
  state: ProcessState;
  pid: number | null;
  startedAt: string | null;
}

/** A refusal the runner answers with: HTTP status and error code. */
export interface RunnerRefusal {
  refused: true;
  status: number;
  code: string;
  message: string;
}

export type Transition =
  | RunnerRefusal
  | { refused: false; state: RunnerState; process?: RunnerProcessRow; moveAside?: boolean; writeProviderState?: boolean };

const refuse = (status: number, code: string, message: string): RunnerRefusal => ({ refused: true, status, code, message });

export function freshState(input: StartRunnerInput, process: { pid: number; startedAt: string }, now: string): RunnerState {
  return {
    runId: input.runId,
    runnerInstanceId: input.runnerInstanceId,
    sessionId: input.sessionId,
    lifecycle: "connecting",
    lastConnectionProtocolVersion: null,
    lastControllerCommandSeq: 0,
    reconnectCount: 0,
    outbox: [],
    processedCommands: [],
    pendingTerminalDelivery: null,
    providerStatePresent: false,
    process,
    updatedAt: now,
  };
}

export const bindConflict = (port: number): RunnerRefusal =>
  refuse(409, "runner_ingress_bind_conflict", `runner ingress: listen tcp 0.0.0.0:${port}: bind: address already in use`);

/**
 * start: a live runner of the same instance makes it idempotent; a live runner of another
 * instance holds the ingress port; otherwise a fresh state, the old one moved aside.
 */
export function start(
  current: RunnerState | null,
  process: RunnerProcessRow,
  input: StartRunnerInput,
  spawn: { pid: number; startedAt: string },
  now: string,
  ingressPort: number,
): Transition {
  if (process.state === "running") {
    if (current && current.runnerInstanceId === input.runnerInstanceId && current.runId === input.runId && current.sessionId === input.sessionId) {
      return { refused: false, state: current };
    }
    return bindConflict(ingressPort);
  }
  return {
    refused: false,
    state: freshState(input, spawn, now),
    process: { state: "running", pid: spawn.pid, startedAt: spawn.startedAt },
    moveAside: current !== null,
  };
}

function requireLive(current: RunnerState | null, process: RunnerProcessRow): RunnerRefusal | RunnerState {
  if (!current) return refuse(404, "runner_state_missing", "no runner-state.json on this sandbox: start a runner first");
  if (process.state !== "running") return refuse(409, "runner_not_running", `the runner process is ${process.state}`);
  return current;
}

const isRefusal = (v: RunnerRefusal | RunnerState): v is RunnerRefusal => "refused" in v;

export function sessionOpen(current: RunnerState | null, process: RunnerProcessRow, now: string): Transition {
  const live = requireLive(current, process);
  if (isRefusal(live)) return live;
  if (live.lifecycle === "ready" && live.providerStatePresent) return { refused: false, state: live };
  if (live.lifecycle !== "connecting") {
    return refuse(409, "runner_not_connecting", `session.open needs a connecting runner; it is ${live.lifecycle} (reattach instead)`);
  }
  return {
    refused: false,
    state: { ...live, lifecycle: "ready", lastConnectionProtocolVersion: 1, providerStatePresent: true, updatedAt: now },
    writeProviderState: true,
  };
}

/** A definite session.open failure leaves the runner failed, recoverably or not. */
export function sessionRejected(current: RunnerState, failure: ProviderFailure, now: string): RunnerState {
  const lifecycle: RunnerLifecycle = failure.kind === "requires_action" ? "unrecoverable" : "recoverable_failure";
  return { ...current, lifecycle, updatedAt: now };
}

export function reattach(current: RunnerState | null, process: RunnerProcessRow, now: string): Transition {
  const live = requireLive(current, process);
  if (isRefusal(live)) return live;
  if (live.lastConnectionProtocolVersion === null) {
    return refuse(409, "runner_never_connected", "the runner never connected: open a session instead");
  }
  switch (live.lifecycle) {
    case "ready":
    case "suspended":
    case "backpressure":
      return { refused: false, state: { ...live, lifecycle: "ready", reconnectCount: live.reconnectCount + 1, updatedAt: now } };
    case "connecting":
    case "recoverable_failure":
    case "unrecoverable":
    case "stopped":
    case "revoked":
      return refuse(409, "runner_not_reattachable", `a ${live.lifecycle} runner cannot be reattached`);
    default: {
      const never: never = live.lifecycle;
      return never;
    }
  }
}

export function turn(current: RunnerState | null, process: RunnerProcessRow, seq: number, now: string): Transition {
  const live = requireLive(current, process);
  if (isRefusal(live)) return live;
  const done = live.processedCommands.some((c) => (c as { seq?: unknown }).seq === seq);
  if (done) return { refused: false, state: live };
  if (live.lifecycle !== "ready") return refuse(409, "runner_not_ready", `the runner is ${live.lifecycle}`);
  if (seq <= live.lastControllerCommandSeq) {
    return refuse(409, "stale_command_seq", `seq ${seq} is not after the last command ${live.lastControllerCommandSeq}`);
  }
  return {
    refused: false,
    state: {
      ...live,
      lastControllerCommandSeq: seq,
      processedCommands: [...live.processedCommands, { seq, kind: "turn", processedAt: now }],
      updatedAt: now,
    },
  };
}

export function suspend(current: RunnerState | null, process: RunnerProcessRow, now: string): Transition {
  const live = requireLive(current, process);
  if (isRefusal(live)) return live;
  if (live.lifecycle === "suspended") return { refused: false, state: live };
  if (live.lifecycle === "stopped" || live.lifecycle === "revoked") {
    return refuse(409, "runner_not_suspendable", `a ${live.lifecycle} runner cannot be suspended`);
  }
  return { refused: false, state: { ...live, lifecycle: "suspended", updatedAt: now } };
}

/** stop: lifecycle `stopped`, the process exits. Idempotent; fine without a state file. */
export function stop(current: RunnerState | null, process: RunnerProcessRow, now: string): { state: RunnerState | null; process: RunnerProcessRow } {
  const exited: RunnerProcessRow = process.state === "running" ? { ...process, state: "stopped" } : process;
  if (!current) return { state: null, process: exited };
  const state = current.lifecycle === "stopped" ? current : { ...current, lifecycle: "stopped" as const, updatedAt: now };
  return { state, process: exited };
}
