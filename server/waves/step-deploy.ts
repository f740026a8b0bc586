/**
 * KD, a rolling deploy to the next build (docs/rules.md §5; docs/waves.md), as part of the
 * wave's pure transition (server/waves/step.ts). The target controller (this build) has a run
 * in flight; a controller of the next build (server/waves/run/next-build.ts) is started beside
 * it, both live on one database until DEPLOY_OVERLAP_MS after the next build is ready; then a
 * run in session on the old one is found, the old one is SIGKILLed (a hard stop mid-deploy)
 * and the wave watches that run's takeover. KD lands when the next build's controller took it
 * over — the run's executor became its boot (as K5's takeover is watched:
 * run/observe.ts, `watchTakeover`). From then on the next build is the target, and every
 * controller the wave starts runs it.
 */

import { killAt, type ControllerView, type WaveAction, type WaveObservation, type WaveState } from "./step-state";

/** How long both builds are live on one database before the old one is stopped. */
export const DEPLOY_OVERLAP_MS = 1000;

/**
 * KD fires (on work in flight on `target`): the next build's controller starts first, the old
 * one left running. `start` is the start action, built once `state.build` is the next one.
 */
export function deployFires(state: WaveState, index: number, target: ControllerView, runId: string, start: WaveAction): WaveAction[] {
  state.deploy = { kill: index, old: target, next: null, phase: "starting" };
  return [
    { type: "note", kind: "kill", detail: `KD: the next build's controller starts beside pid ${target.pid} (run ${runId} in flight)` },
    // The first kill's provider-wide faults, as a K5 lands them: before the next start.
    { type: "land_faults" },
    start,
  ];
}

/** The next build's controller is up: it is the target now; the old one runs on beside it for the overlap. */
export function deployStarted(state: WaveState, index: number, controller: ControllerView): void {
  const deploy = state.deploy;
  const kill = killAt(state, index);
  kill.restartPid = controller.pid;
  if (!deploy || deploy.kill !== index) throw new Error(`KD #${index}: a next build started outside its deploy`);
  deploy.next = controller;
  deploy.phase = "overlap";
  kill.detail = `next build pid ${controller.pid} up beside pid ${deploy.old.pid}`;
}

/** On a poll: once the overlap is over, find a run in session on the old build to stop it with. True when it acted. */
export function deployOverlapOver(state: WaveState, o: Extract<WaveObservation, { kind: "poll" }>, actions: WaveAction[]): boolean {
  const deploy = state.deploy;
  if (!deploy || deploy.phase !== "overlap" || !deploy.next) return false;
  if (o.atMs - deploy.next.readyAtMs < DEPLOY_OVERLAP_MS) return false;
  deploy.phase = "finding";
  actions.push({ type: "find_run_in_flight", kill: deploy.kill, bootId: deploy.old.bootId, pid: deploy.old.pid });
  return true;
}

/** The run in session on the old build (or none): SIGKILL it either way, and watch the run's takeover when there is one. */
export function deployStop(state: WaveState, o: Extract<WaveObservation, { kind: "run_in_flight" }>, actions: WaveAction[]): void {
  const deploy = state.deploy;
  if (!deploy || deploy.kill !== o.kill || deploy.phase !== "finding") return;
  const kill = killAt(state, o.kill);
  const pid = deploy.old.pid;
  const stop: WaveAction = { type: "stop", pid, signal: "SIGKILL" };
  if (o.runId === null) {
    // The deploy still finishes: the old build goes, but nothing of it was left in flight to take over.
    kill.landed = false;
    kill.detail = `no run was in session on the old build's pid ${pid} once the next build was up (run ${kill.interruptedRunId} had been)`;
    actions.push(stop, { type: "note", kind: "kill", detail: `KD did not land: ${kill.detail}` });
    state.deploy = null;
    return;
  }
  kill.interruptedRunId = o.runId;
  deploy.phase = "watching";
  actions.push(
    // Right before the stop, as an operator forecasts a deploy: after it, the next build —
    // already live on this host — takes the run over at once, and a forecast taken then could
    // postdate the restart it forecasts (checked as `not_restarted`). A run that moves while it
    // is taken is not kept (run/forecast-at-kill.ts). This build's forecaster (in-process,
    // quick): the old one's runs hold this build's runner, which the next build releases too
    // (run/next-build.ts), so both judge them alike. Forecasts of later kills are the next
    // build's (step.ts).
    { type: "forecast", kill: "KD", bootId: deploy.old.bootId },
    stop,
    { type: "note", kind: "kill", detail: `KD: SIGKILL the old build's pid ${pid} with run ${o.runId} in flight; next build pid ${deploy.next?.pid} takes over` },
    // Since the kill fired: the next build may have taken the run over, even finished it, while the forecast was taken.
    { type: "watch_takeover", kill: o.kill, runId: o.runId, stalledBootId: deploy.old.bootId, pid, sinceMs: kill.firedAtMs ?? 0 },
  );
}

/** Landed only when the next build's controller took the run over (not another one left running, not nobody). */
export function deployTakeover(state: WaveState, o: Extract<WaveObservation, { kind: "takeover" }>, actions: WaveAction[]): void {
  const deploy = state.deploy;
  if (!deploy || deploy.kill !== o.kill || deploy.phase !== "watching") return;
  const kill = killAt(state, o.kill);
  const next = deploy.next;
  const runId = kill.interruptedRunId;
  kill.takeoverAtMs = o.takenBy ? o.atMs : null;
  kill.takeoverReason = o.reason;
  const byNext = o.takenBy !== null && next !== null && o.takenBy === next.bootId;
  kill.landed = byNext;
  const secs = (ms: number) => (ms / 1000).toFixed(1);
  kill.detail = byNext
    ? `old build pid ${deploy.old.pid} SIGKILLed; run ${runId} taken over by the next build's pid ${next.pid} (seen ${secs(o.stalledMs)} s into the watch after the stop and the forecast; judged ${o.reason ?? "without a recovery_started event"})`
    : o.takenBy
      ? `run ${runId} was taken over by boot ${o.takenBy}, not by the next build's controller`
      : `run ${runId} was not taken over within ${secs(o.stalledMs)} s of the stop${o.ended ? ` (it ${o.ended} first)` : ""}`;
  actions.push({ type: "note", kind: "kill", detail: `KD ${byNext ? "landed" : "did not land"}: ${kill.detail}` });
  state.deploy = null;
}
