/**
 * The restart-chaos wave's decisions (docs/rules.md §5) as one pure transition: given what the
 * wave knows (`WaveState`) and what its shell just saw or did (`WaveObservation`), the next
 * state and the actions the shell carries out, as data. No database, no process, no clock: the
 * wave's time comes in with each observation. The shell that observes and acts is
 * `server/waves/runner.ts` (run/observe.ts, run/perform.ts).
 *
 * Which kill fires when, what a kill does to its controller and the one after it, when a K4
 * has landed at its crash point, when the wave clicks Retry, which tasks it holds back so that
 * every planned kill finds work in flight, and when it is settled enough to judge.
 */

import { fireAgain } from "./step-refire";
import { assertNever, isLiveRunStatus } from "../engine";
import type { PlannedKill, WavePlan } from "./plan";
import { tasksHeldBack } from "./plan";
import { deployFires, deployOverlapOver, deployStarted, deployStop, deployTakeover } from "./step-deploy";
import { killAt } from "./step-state";
import { judgeTakeover, stallOrMiss } from "./step-stall";
import type { ControllerView, CrashAt, StartReason, TaskView, WaveAction, WaveConfig, WaveObservation, WaveState, WaveStep } from "./step-state";

export type * from "./step-state";

export function initialWaveState(plan: WavePlan, config: WaveConfig): WaveState {
  const held = tasksHeldBack(plan);
  return {
    config,
    plannedKills: plan.kills,
    taskKeys: plan.tasks.map((t) => t.key),
    phase: "starting",
    held,
    submitted: [],
    controller: null,
    bystanders: [],
    drained: [],
    generation: 0,
    kills: plan.kills.map((k) => ({
      kind: k.kind,
      ...(k.crashAt ? { crashAt: k.crashAt } : {}),
      afterReadyMs: k.atMs,
      landed: false,
      firedAtMs: null,
      targetPid: null,
      interruptedRunId: null,
      crashPointAtMs: null,
      ...(k.kind === "K5" || k.kind === "KD" ? { takeoverAtMs: null, takeoverReason: null } : {}),
      restartPid: null,
      detail: "not fired",
    })),
    next: 0,
    armed: null,
    stalling: null,
    deploy: null,
    build: "current",
    retried: {},
    refired: {},
    settledSinceMs: null,
  };
}

export function nextWaveStep(previous: WaveState, observation: WaveObservation): WaveStep {
  const state = structuredClone(previous);
  const actions: WaveAction[] = [];
  switch (observation.kind) {
    case "begin":
      begin(state, actions);
      break;
    case "poll":
      if (state.phase === "running") poll(state, observation, actions);
      break;
    case "started":
      started(state, observation, actions);
      break;
    case "drained": {
      const kill = killAt(state, observation.kill);
      kill.landed = observation.suspended;
      kill.detail = observation.suspended ? `drained: run ${kill.interruptedRunId} suspended` : `the drain did not suspend run ${kill.interruptedRunId}`;
      if (!observation.suspended) fireAgain(state, observation.kill, actions);
      break;
    }
    case "run_in_flight":
      if (state.deploy?.kill === observation.kill) deployStop(state, observation, actions);
      else stallOrMiss(state, observation, actions);
      break;
    case "takeover":
      if (state.deploy?.kill === observation.kill) deployTakeover(state, observation, actions);
      else judgeTakeover(state, observation, actions);
      break;
    case "retried":
      if (observation.successors > 0) state.retried[observation.key] = (state.retried[observation.key] ?? 0) + 1;
      break;
    default:
      assertNever(observation);
  }
  return { state, actions };
}

function startAction(state: WaveState, why: string, reason: StartReason, how: { crashAt?: CrashAt; freshHome?: boolean; pidNamespace?: boolean } = {}): WaveAction {
  state.generation += 1;
  // Once a KD deployed the next build, every controller started is of it (docs/rules.md §5).
  return { type: "start", why, generation: state.generation, reason, ...how, ...(state.build === "next" ? { build: "next" as const } : {}) };
}

function begin(state: WaveState, actions: WaveAction[]) {
  for (const key of state.taskKeys.filter((k) => !state.held.includes(k))) {
    state.submitted.push(key);
    actions.push({ type: "submit", key });
  }
  if (state.held.length > 0) {
    actions.push({ type: "note", kind: "hold", detail: `held back ${state.held.join(", ")} until the planned kills need work in flight` });
  }
  actions.push(startAction(state, "first", { as: "first" }));
}

function started(state: WaveState, o: Extract<WaveObservation, { kind: "started" }>, actions: WaveAction[]) {
  const previous = state.controller;
  state.controller = o.controller;
  if (state.phase === "starting") state.phase = "running";
  const r = o.reason;
  switch (r.as) {
    case "first":
    case "after_exit":
      return;
    case "restart": {
      const kill = killAt(state, r.kill);
      kill.restartPid = o.controller.pid;
      if (kill.kind === "K2") {
        // Landed once the drain is seen to have suspended the run it caught (checked now, after the restart).
        actions.push({ type: "check_drain", kill: r.kill, runId: kill.interruptedRunId ?? "", sinceMs: kill.firedAtMs ?? 0 });
      } else {
        kill.landed = true;
        kill.detail = `interrupted run ${kill.interruptedRunId} in flight`;
      }
      return;
    }
    case "armed": {
      const kill = killAt(state, r.kill);
      kill.restartPid = o.controller.pid;
      state.armed = r.kill;
      kill.interruptedRunId = null; // the run the crash interrupts is known when it happens
      kill.detail = `armed controller pid ${o.controller.pid} waits for ${kill.crashAt}`;
      return;
    }
    case "after_crash":
      killAt(state, r.kill).restartPid = o.controller.pid;
      return;
    case "other_host": {
      // The wave now targets the other host; the old one is stalled once a run is in session on it.
      killAt(state, r.kill).restartPid = o.controller.pid;
      if (!previous) throw new Error("K5: no controller to stall");
      state.stalling = { kill: r.kill, target: previous, runId: null };
      actions.push({ type: "find_run_in_flight", kill: r.kill, bootId: previous.bootId, pid: previous.pid });
      return;
    }
    case "next_build":
      deployStarted(state, r.kill, o.controller);
      return;
    default:
      assertNever(r);
  }
}

function poll(state: WaveState, o: Extract<WaveObservation, { kind: "poll" }>, actions: WaveAction[]) {
  // ── the target's exit: a K4 at its crash point, or a restart ──
  if (o.exited && state.controller && o.exited.pid === state.controller.pid) {
    const exit = o.exited;
    const armed = state.armed === null ? null : killAt(state, state.armed);
    if (armed && state.armed !== null && exit.crash && !exit.byWave) {
      // K4 landed: the armed controller died at its crash point, by its own SIGKILL.
      const crash = exit.crash;
      armed.landed = true;
      armed.crashPointAtMs = exit.diedAtMs;
      armed.interruptedRunId = crash.runId;
      armed.detail = `crash point ${crash.point} reached${crash.runId ? ` in run ${crash.runId}` : ""}${crash.leaseId ? ` in the teardown of lease ${crash.leaseId}` : ""}`;
      actions.push(
        { type: "note", kind: "crash", detail: `K4: controller pid ${exit.pid} reached its crash point ${crash.point}${crash.runId ? ` (run ${crash.runId})` : ""}` },
        startAction(state, "after the K4 crash", { as: "after_crash", kill: state.armed }),
      );
      state.armed = null;
    } else {
      if (armed) {
        armed.detail = `the armed controller exited (${exit.code}) without reaching ${armed.crashAt}`;
        state.armed = null;
      }
      actions.push({ type: "note", kind: "restart", detail: `controller pid ${exit.pid} exited (${exit.code}); starting another` }, startAction(state, "after an exit", { as: "after_exit" }));
    }
    // The next poll sees the restarted controller; nothing else is decided on a dead one.
    state.settledSinceMs = null;
    return;
  }

  // ── a KD's overlap over: the old build is stopped next (server/waves/step-deploy.ts) ──
  if (deployOverlapOver(state, o, actions)) {
    state.settledSinceMs = null;
    return;
  }

  const target = state.controller;
  const views = new Map(o.tasks.map((t) => [t.key, t]));
  const everyTaskSettled = state.taskKeys.every((k) => views.has(k) && settled(views.get(k)!));
  if (state.armed !== null && state.held.length === 0 && everyTaskSettled && o.cleanupDone) {
    // Nothing left that could create or tear down a sandbox, and nothing held back: the crash point cannot be reached.
    const armed = killAt(state, state.armed);
    armed.detail = `crash point ${armed.crashAt} not reachable: every task had settled and nothing was left to create or tear down`;
    actions.push({ type: "note", kind: "kill", detail: `K4 did not land: ${armed.detail}` });
    state.armed = null;
  }

  // ── the next kill: due after its delay, on work in flight ──
  const kill = state.kills[state.next];
  const planned = state.plannedKills[state.next];
  // No kill fires while a KD's deploy is under way: its target is the next build once it is over.
  const due = state.armed === null && state.deploy === null && kill !== undefined && target !== null && o.atMs - target.readyAtMs >= kill.afterReadyMs;
  // A K5's woken controller, left running with its stale view (docs/rules.md §5), claims queued
  // runs like any other: work released for the next kill would as often be its as the
  // target's. It is drained once that kill is due (or a K4 armed): the runs it holds are then
  // suspended for the target to recover, and what is released next can only be the target's.
  const awake = state.bystanders.filter((b) => !state.drained.includes(b.pid));
  if ((due || state.armed !== null) && awake.length > 0) {
    for (const b of awake) {
      state.drained.push(b.pid);
      const why = state.armed !== null ? `the armed K4 waits for ${killAt(state, state.armed).crashAt}` : `${kill?.kind} is due`;
      actions.push({ type: "note", kind: "drain", detail: `the woken K5 controller pid ${b.pid} is drained (SIGTERM): ${why}` }, { type: "stop", pid: b.pid, signal: "SIGTERM" });
    }
    state.settledSinceMs = null;
    return;
  }
  let fired = false;
  if (due && kill && planned && target && o.inFlightRunId && o.archiveReady) {
    fired = true;
    const index = state.next;
    state.next += 1;
    kill.firedAtMs = o.atMs;
    kill.targetPid = target.pid;
    kill.interruptedRunId = o.inFlightRunId;
    actions.push(...killActions(state, index, planned, target, o.inFlightRunId));
  }

  // ── Retry where the catalogue offers it ──
  const retries: WaveAction[] = [];
  for (const key of state.submitted) {
    const view = views.get(key);
    if (!view || (state.retried[key] ?? 0) >= state.config.retries) continue;
    if (view.status === "failed" && view.outcome === "terminal_failure" && view.canRetry) {
      // A double click, like an impatient board user: both must land on the same successor (R3).
      retries.push({ type: "retry", key, runId: view.runId, failureCode: view.failureCode, clicks: 2 });
    }
  }
  actions.push(...retries);

  // ── held-back tasks: released while a planned kill needs work it would not otherwise find ──
  // A K4 fired on this poll is armed once its controller is up: still pending.
  // A KD under way is pending too: what is released now would as often be the old build's as the next's.
  const killPending = state.next < state.kills.length || state.armed !== null || state.deploy !== null || (fired && planned?.kind === "K4");
  if (state.held.length > 0) {
    // Work the target has or will have: a live run (a queued one, one the last kill's restart or
    // a drain leaves it to recover, one in session — no woken K5 controller is left to take it
    // when work is needed: drained above), or a Retry about to make one.
    const workComing = fired || retries.length > 0 || o.tasks.some((t) => isLiveRunStatus(t.status));
    // A kill waits for its delay first: a task released earlier could be over by then.
    const needsWork = state.armed !== null || due;
    if (!killPending) {
      for (const key of state.held.splice(0)) {
        state.submitted.push(key);
        actions.push({ type: "submit", key });
      }
      actions.push({ type: "note", kind: "hold", detail: "every planned kill has fired: the held-back tasks are released" });
    } else if (needsWork && !workComing) {
      const key = state.held.shift()!;
      state.submitted.push(key);
      const waiting = state.armed !== null ? `the armed K4 waits for ${killAt(state, state.armed).crashAt}` : `${kill?.kind} is due`;
      actions.push({ type: "submit", key }, { type: "note", kind: "hold", detail: `${key} released: ${waiting} and controller #${target?.generation} has no work` });
    }
  }

  // ── settled: every task at rest (a held-back task has no run yet: never), its Retries made; then the sweeps get to finish ──
  const allSettled =
    !fired &&
    retries.length === 0 &&
    state.armed === null &&
    state.deploy === null &&
    state.taskKeys.every((k) => {
      const v = views.get(k);
      return v !== undefined && settled(v) && (v.status === "succeeded" || (state.retried[k] ?? 0) >= state.config.retries || !v.canRetry);
    });
  if (allSettled) {
    state.settledSinceMs ??= o.atMs;
    if (o.cleanupDone || o.atMs - state.settledSinceMs > state.config.quiesceMs) {
      finish(state, actions, "settled");
      return;
    }
  } else {
    state.settledSinceMs = null;
  }
  if (o.atMs > state.config.deadlineAtMs) {
    actions.push({ type: "note", kind: "timeout", detail: `tasks did not settle within ${Math.round(state.config.timeoutMs / 1000)} s` });
    finish(state, actions, "timeout");
  }
}

function settled(v: TaskView): boolean {
  return v.status === "succeeded" || (v.status === "failed" && v.outcome === "terminal_failure");
}

/**
 * What each kill kind does to its target and the controller after it (docs/rules.md §5). The
 * forecast is taken once the target is stopped and before anything restarts, after the first
 * kill's faults: what it sees is what the restart meets — a drain's suspensions, an archive.
 */
function killActions(state: WaveState, index: number, planned: PlannedKill, target: ControllerView, runId: string): WaveAction[] {
  const pid = target.pid;
  const then = (note: string, start: WaveAction): WaveAction[] => [
    { type: "note", kind: "kill", detail: note },
    { type: "land_faults" },
    { type: "forecast", kill: planned.kind, bootId: target.bootId, ...(state.build === "next" ? { build: "next" as const } : {}) },
    start,
  ];
  switch (planned.kind) {
    case "K1":
      return [{ type: "stop", pid, signal: "SIGKILL" }, ...then(`K1: SIGKILL pid ${pid} with run ${runId} in flight`, startAction(state, "after K1", { as: "restart", kill: index }))];
    case "K2":
      return [{ type: "stop", pid, signal: "SIGTERM" }, ...then(`K2: SIGTERM pid ${pid} with run ${runId} in flight, drained`, startAction(state, "after K2", { as: "restart", kill: index }))];
    case "K4": {
      const crashAt = planned.crashAt ?? "after_create";
      return [
        { type: "stop", pid, signal: "SIGKILL" },
        ...then(`K4: SIGKILL pid ${pid} with run ${runId} in flight; the next controller dies at ${crashAt}`, startAction(state, "K4 armed", { as: "armed", kill: index }, { crashAt })),
      ];
    }
    case "K5":
      // Another host's controller (a PID namespace of its own, so nobody can judge the other by
      // its pid) comes up first; the stall follows once a run is in session on the target.
      return [{ type: "land_faults" }, startAction(state, "K5: another host", { as: "other_host", kill: index }, { freshHome: true, pidNamespace: true })];
    case "KD":
      // The next build beside the target first; the old one is stopped once both were live a while (step-deploy.ts).
      state.build = "next";
      return deployFires(state, index, target, runId, startAction(state, "KD: the next build beside the old", { as: "next_build", kill: index }));
    case "K15":
      return [
        { type: "stop", pid, signal: "SIGKILL" },
        ...then(`K15: SIGKILL pid ${pid} with run ${runId} in flight; restart with a fresh home`, startAction(state, "after K15, fresh home", { as: "restart", kill: index }, { freshHome: true })),
      ];
    default:
      return assertNever(planned.kind);
  }
}

function finish(state: WaveState, actions: WaveAction[], reason: "settled" | "timeout") {
  for (const k of state.kills.slice(state.next)) {
    const never =
      reason === "timeout"
        ? "never fired: the wave ran out of time before its target controller had work in flight"
        : `never fired: every task settled before its target controller had work in flight, and no task was left to hold back for it (${state.kills.length} kill(s) over ${state.taskKeys.length} task(s))`;
    // A kill fired once and waiting to be fired again (server/waves/step-refire.ts) says both.
    k.detail = k.detail.startsWith("fired again after: ") ? `${k.detail}; ${never.replace("never fired", "not fired again")}` : never;
    actions.push({ type: "note", kind: "kill", detail: `${k.kind} did not land: ${k.detail}` });
  }
  if (state.armed !== null) {
    const armed = killAt(state, state.armed);
    armed.detail = `the wave ended before the armed controller reached ${armed.crashAt}`;
  }
  state.phase = "done";
  actions.push({ type: "judge", reason });
}
