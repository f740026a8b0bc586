/**
 * K5, a stall on another host (docs/rules.md §5; docs/waves.md), as part of the wave's pure
 * transition (server/waves/step.ts): once the other host is up, the target is stalled with a
 * run in session on it, and the kill lands when the other host took that run over by silence.
 */

import { fireAgain } from "./step-refire";
import { killAt, type WaveAction, type WaveObservation, type WaveState } from "./step-state";

export function stallOrMiss(state: WaveState, o: Extract<WaveObservation, { kind: "run_in_flight" }>, actions: WaveAction[]) {
  const stalling = state.stalling;
  if (!stalling || stalling.kill !== o.kill) return;
  const kill = killAt(state, o.kill);
  const pid = stalling.target.pid;
  if (o.runId === null) {
    kill.landed = false;
    kill.detail = `no run was in session on pid ${pid} once the other host was up (run ${kill.interruptedRunId} had been)`;
    actions.push({ type: "note", kind: "kill", detail: `K5 did not land: ${kill.detail}` });
    // Left running beside the other, as a woken one is.
    state.bystanders.push(stalling.target);
    state.stalling = null;
    fireAgain(state, o.kill, actions);
    return;
  }
  stalling.runId = o.runId;
  kill.interruptedRunId = o.runId;
  actions.push(
    { type: "stall", pid },
    // Right after the SIGSTOP: what the forecast sees is what the other host's recovery meets.
    { type: "forecast", kill: "K5", bootId: stalling.target.bootId, ...(state.build === "next" ? { build: "next" as const } : {}) },
    { type: "note", kind: "kill", detail: `K5: SIGSTOP pid ${pid} with run ${o.runId} in flight; pid ${state.controller?.pid} on another host` },
    { type: "watch_takeover", kill: o.kill, runId: o.runId, stalledBootId: stalling.target.bootId, pid },
  );
}

export function judgeTakeover(state: WaveState, o: Extract<WaveObservation, { kind: "takeover" }>, actions: WaveAction[]) {
  const stalling = state.stalling;
  if (!stalling || stalling.kill !== o.kill) return;
  const kill = killAt(state, o.kill);
  const pid = stalling.target.pid;
  const runId = stalling.runId;
  kill.takeoverAtMs = o.takenBy ? o.atMs : null;
  kill.takeoverReason = o.reason;
  // Landed as planned only when the takeover came from silence: nothing else may judge another host.
  const bySilence = o.reason?.startsWith("silent_for_") ?? false;
  kill.landed = o.takenBy !== null && bySilence;
  const secs = (ms: number) => (ms / 1000).toFixed(1);
  const silentFor = o.silentForMs !== null ? ` (${secs(o.silentForMs)} s since its last heartbeat; the window is ${state.config.silenceMs / 1000} s)` : "";
  const by = o.takenBy === state.controller?.bootId ? `pid ${state.controller?.pid} on another host` : `the controller with boot ${o.takenBy}`;
  kill.detail = o.takenBy
    ? `stalled pid ${pid} ${secs(o.stalledMs)} s${silentFor}; run ${runId} taken over by ${by} (judged ${o.reason ?? "without a recovery_started event"})${bySilence ? "" : ", not by silence"}; the stalled one woken and left running`
    : `run ${runId} was not taken over within ${secs(o.stalledMs)} s of the stall${o.ended ? ` (it ${o.ended} first)` : ""}`;
  actions.push(
    { type: "wake", pid },
    { type: "note", kind: "kill", detail: `K5: SIGCONT pid ${pid} after ${secs(o.stalledMs)} s; ${o.takenBy ? `run ${runId} taken over by ${by}` : "no takeover"}` },
  );
  state.bystanders.push(stalling.target);
  state.stalling = null;
  if (!kill.landed) fireAgain(state, o.kill, actions);
}
