import type { KillKind } from "../shared/wave-report";
import type { PlannedKill, PlannedTask, WavePlan } from "../waves/plan";
import { initialWaveState, nextWaveStep, type ControllerView, type TaskView, type WaveAction, type WaveObservation, type WaveState } from "../waves/step";

/**
 * Test support for the wave's pure step (server/waves/step.ts): plans, observations, a wave
 * begun, a kill fired, and a small simulated world the step can be run against.
 */

export const task = (key: string, over: Partial<PlannedTask> = {}): PlannedTask => ({ key, agent: "a", provider: "codex", target: "remote", sandboxMode: "warm", turns: 3, faults: [], ...over });
export const plan = (tasks: PlannedTask[], kills: PlannedKill[], concurrency = 2): WavePlan => ({ seed: 1, tasks, kills, concurrency });
export const CONFIG = { retries: 1, quiesceMs: 20_000, timeoutMs: 240_000, deadlineAtMs: 240_000, silenceMs: 6000 };

export const controller = (generation: number, readyAtMs: number): ControllerView => ({ pid: 100 + generation, bootId: `boot-${generation}`, readyAtMs, generation });

export const run = (key: string, over: Partial<TaskView> = {}): TaskView => ({
  key,
  runId: `run-${key}`,
  status: "running",
  outcome: null,
  failureCode: null,
  canRetry: false,
  turnsDone: 1,
  turnsPlanned: 3,
  executorBootId: "boot-1",
  ...over,
});
export const done = (key: string, over: Partial<TaskView> = {}) => run(key, { status: "succeeded", turnsDone: 3, ...over });

export type Poll = Extract<WaveObservation, { kind: "poll" }>;
export const poll = (atMs: number, tasks: TaskView[], over: Partial<Poll> = {}): Poll => ({ kind: "poll", atMs, tasks, exited: null, inFlightRunId: null, archiveReady: true, cleanupDone: false, ...over });

/** A wave begun and its first controller up (ready at 1 s). */
export function begun(p: WavePlan, config = CONFIG): WaveState {
  const first = nextWaveStep(initialWaveState(p, config), { kind: "begin", atMs: 0 });
  return nextWaveStep(first.state, { kind: "started", atMs: 1000, reason: { as: "first" }, controller: controller(1, 1000) }).state;
}

export const types = (actions: WaveAction[]) => actions.map((a) => (a.type === "note" ? `note:${a.kind}` : a.type));
export const of = <T extends WaveAction["type"]>(actions: WaveAction[], type: T) => actions.filter((a): a is Extract<WaveAction, { type: T }> => a.type === type);

/** Fires the single planned kill on run-t01 in flight on controller #1, 2 s after it was ready. */
export function fire(kind: KillKind, over: Partial<PlannedKill> = {}, tasks = [task("t01"), task("t02")]) {
  const state = begun(plan(tasks, [{ kind, atMs: 500, ...over }]));
  return nextWaveStep(state, poll(3000, [run("t01"), run("t02")], { inFlightRunId: "run-t01" }));
}

/** Feeds the controller the kill's start action asks for. */
export function restart(state: WaveState, actions: WaveAction[], atMs = 4000) {
  const start = of(actions, "start")[0]!;
  return nextWaveStep(state, { kind: "started", atMs, reason: start.reason, controller: controller(start.generation, atMs) });
}

/**
 * A small world for the step: a controller runs up to `concurrency` runs, each a few 200 ms polls
 * of turns; a restart takes 1 s; the armed K4 controller dies when it creates (a run starts on it)
 * or tears down (a run ends on it); a woken K5 controller still running claims queued runs before
 * the target does; a KD's old build runs its runs until it is stopped. Shaped like seed 4817's
 * wave: its tasks end before its kills.
 */
export function simulate(p: WavePlan, initial: WaveState): WaveState {
  let now = 0;
  let state = initial;
  const runs = new Map<string, { view: TaskView; left: number }>();
  const alive = new Set<number>();
  let crash: { pid: number; at: string } | null = null;
  const queue: WaveObservation[] = [{ kind: "begin", atMs: 0 }];
  const perform = (a: WaveAction): WaveObservation | null => {
    switch (a.type) {
      case "submit": {
        const t = p.tasks.find((x) => x.key === a.key)!;
        runs.set(a.key, { view: run(a.key, { status: "queued", executorBootId: null, turnsDone: 0, turnsPlanned: t.turns }), left: t.turns * 2 });
        return null;
      }
      case "start":
        now += 1000;
        alive.add(100 + a.generation);
        return { kind: "started", atMs: now, reason: a.reason, controller: controller(a.generation, now) };
      case "stop":
        alive.delete(a.pid);
        // A drain suspends what it executes (docs/rules.md §5, K2).
        if (a.signal === "SIGTERM") for (const r of runs.values()) if (r.view.status === "running" && r.view.executorBootId === `boot-${a.pid - 100}`) r.view.status = "suspended";
        return null;
      case "check_drain":
        return { kind: "drained", kill: a.kill, suspended: true };
      case "find_run_in_flight": {
        const r = [...runs.values()].find((x) => x.view.status === "running" && x.view.executorBootId === a.bootId);
        return { kind: "run_in_flight", kill: a.kill, runId: r?.view.runId ?? null };
      }
      case "watch_takeover":
        now += 7000;
        for (const r of runs.values()) if (r.view.executorBootId === a.stalledBootId) r.view.executorBootId = state.controller!.bootId;
        return { kind: "takeover", kill: a.kill, atMs: now, takenBy: state.controller!.bootId, reason: "silent_for_7s", ended: null, stalledMs: 7000, silentForMs: 7000 };
      default:
        return null;
    }
  };
  for (let i = 0; i < 2000 && state.phase !== "done"; i++) {
    const o = queue.shift() ?? world();
    const step = nextWaveStep(state, o);
    state = step.state;
    for (const a of step.actions) {
      const seen = perform(a);
      if (seen) queue.push(seen);
    }
    // What an action saw goes straight back, as the shell's loop does.
    while (queue.length && state.phase !== "done") {
      const next = nextWaveStep(state, queue.shift()!);
      state = next.state;
      for (const a of next.actions) {
        const seen = perform(a);
        if (seen) queue.push(seen);
      }
    }
  }
  return state;

  function world(): Poll {
    now += 200;
    const target = state.controller!;
    const armedPid = state.armed !== null ? target.pid : null;
    const planned = state.armed !== null ? p.kills[state.armed]!.crashAt : null;
    // A woken K5 controller still running claims queued runs first (the worst case for the wave).
    const awake = state.bystanders.filter((b) => alive.has(b.pid));
    // A KD's old build runs on beside the next one until it is stopped: its runs are its own.
    const deploying = state.deploy && alive.has(state.deploy.old.pid) ? [state.deploy.old] : [];
    const runsOf = (bootId: string | null) => [...runs.values()].filter((r) => r.view.status === "running" && r.view.executorBootId === bootId);
    for (const boot of [target.bootId, ...awake.map((b) => b.bootId), ...deploying.map((d) => d.bootId)]) {
      for (const r of runsOf(boot)) {
        r.left -= 1;
        r.view.turnsDone = Math.min(r.view.turnsPlanned, Math.floor((r.view.turnsPlanned * 2 - r.left) / 2));
        if (r.left <= 0) {
          r.view.status = "succeeded";
          if (boot === target.bootId && armedPid !== null && planned === "during_teardown_claim") crash ??= { pid: armedPid, at: planned };
        }
      }
    }
    for (const r of runs.values()) {
      // A run whose executor is gone (killed, drained) is the target's to recover.
      const executing = r.view.executorBootId === target.bootId || [...awake, ...deploying].some((b) => b.bootId === r.view.executorBootId);
      if ((r.view.status === "running" || r.view.status === "suspended") && !executing) {
        r.view.status = "running";
        r.view.executorBootId = target.bootId;
      }
      if (r.view.status !== "queued") continue;
      const thief = awake.find((b) => runsOf(b.bootId).length < p.concurrency);
      if (thief) {
        r.view.status = "running";
        r.view.executorBootId = thief.bootId;
      } else if (runsOf(target.bootId).length < p.concurrency) {
        r.view.status = "running";
        r.view.executorBootId = target.bootId;
        if (armedPid !== null && planned === "after_create") crash ??= { pid: armedPid, at: planned };
      }
    }
    const exited = crash && crash.pid === target.pid ? { pid: crash.pid, code: "SIGKILL", diedAtMs: now, byWave: false, crash: { point: crash.at, runId: null, leaseId: null } } : null;
    if (exited) crash = null;
    const inFlight = runsOf(target.bootId)[0]?.view.runId ?? null;
    return poll(now, [...runs.values()].map((r) => ({ ...r.view })), { exited, inFlightRunId: inFlight, cleanupDone: true });
  }
}
