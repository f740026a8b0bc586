import { describe, expect, it } from "vitest";
import { planWave, tasksHeldBack } from "./plan";
import { initialWaveState, nextWaveStep, type WaveState } from "./step";
import { DEPLOY_OVERLAP_MS } from "./step-deploy";
import { begun, controller, fire, of, plan, poll, restart, run, simulate, task, types } from "../test/wave-step";

/**
 * KD, a rolling deploy to the next build (server/waves/step-deploy.ts, docs/rules.md §5), pure:
 * it fires only on work in flight, starts the next build beside the target before it stops the
 * old one, lands only on the next build's takeover, and leaves the next build the target.
 */

/** KD fired on run-t01 (at 3 s), the next build up at 4 s, the overlap over, run-t02 found in session on the old one. */
function stopped() {
  const fired = fire("KD");
  const up = restart(fired.state, fired.actions);
  const over = nextWaveStep(up.state, poll(4000 + DEPLOY_OVERLAP_MS, [run("t01"), run("t02")]));
  const found = nextWaveStep(over.state, { kind: "run_in_flight", kill: 0, runId: "run-t02" });
  return { fired, up, over, found };
}

const takeover = (state: WaveState, takenBy: string | null, ended: string | null = null) =>
  nextWaveStep(state, { kind: "takeover", kill: 0, atMs: 6500, takenBy, reason: takenBy ? "dead_pid" : null, ended, stalledMs: 500, silentForMs: null });

describe("KD: a rolling deploy to the next build", () => {
  it("fires only with work in flight on its target", () => {
    const state = begun(plan([task("t01"), task("t02")], [{ kind: "KD", atMs: 500 }]));
    const idle = nextWaveStep(state, poll(3000, [run("t01", { status: "starting" })]));
    expect(of(idle.actions, "start")).toEqual([]);
    expect(idle.state.next).toBe(0);
    expect(idle.state.deploy).toBeNull();
    const busy = nextWaveStep(state, poll(3000, [run("t01")], { inFlightRunId: "run-t01" }));
    expect(types(busy.actions)).toEqual(["note:kill", "land_faults", "start"]);
    expect(busy.state.kills[0]).toMatchObject({ firedAtMs: 3000, targetPid: 101, interruptedRunId: "run-t01", landed: false });
  });

  it("starts the next build beside the target first; SIGKILLs the old one only after the overlap, on a run in session", () => {
    const { fired, up, over, found } = stopped();
    // Nothing is stopped when it fires: the next build starts with the old one running.
    expect(of(fired.actions, "stop")).toEqual([]);
    expect(of(fired.actions, "start")[0]).toMatchObject({ build: "next", reason: { as: "next_build", kill: 0 } });
    expect(up.actions).toEqual([]);
    expect(up.state.deploy).toMatchObject({ phase: "overlap", old: { pid: 101 }, next: { pid: 102 } });
    // Both live until the overlap is over.
    const early = nextWaveStep(up.state, poll(4000 + DEPLOY_OVERLAP_MS - 200, [run("t01"), run("t02")]));
    expect(types(early.actions).filter((t) => t === "stop" || t === "find_run_in_flight")).toEqual([]);
    expect(over.actions).toEqual([{ type: "find_run_in_flight", kill: 0, bootId: "boot-1", pid: 101 }]);
    expect(found.actions).toEqual([
      { type: "forecast", kill: "KD", bootId: "boot-1" },
      { type: "stop", pid: 101, signal: "SIGKILL" },
      { type: "note", kind: "kill", detail: "KD: SIGKILL the old build's pid 101 with run run-t02 in flight; next build pid 102 takes over" },
      { type: "watch_takeover", kill: 0, runId: "run-t02", stalledBootId: "boot-1", pid: 101, sinceMs: 3000 },
    ]);
    expect(found.state.kills[0]!.interruptedRunId).toBe("run-t02");
  });

  it("lands only when the next build's controller took the run over", () => {
    const { found } = stopped();
    const landed = takeover(found.state, "boot-2");
    expect(landed.state.kills[0]).toMatchObject({ landed: true, takeoverAtMs: 6500, takeoverReason: "dead_pid", restartPid: 102 });
    expect(landed.state.deploy).toBeNull();
    expect(takeover(found.state, "boot-9").state.kills[0]).toMatchObject({ landed: false, detail: "run run-t02 was taken over by boot boot-9, not by the next build's controller" });
    expect(takeover(found.state, null, "succeeded").state.kills[0]).toMatchObject({ landed: false, takeoverAtMs: null });
    // Before the takeover is judged it has not landed: not at the start, not at the stop.
    expect(found.state.kills[0]!.landed).toBe(false);
  });

  it("does not land, but still stops the old build, when nothing is left in session on it", () => {
    const { over } = stopped();
    const missed = nextWaveStep(over.state, { kind: "run_in_flight", kill: 0, runId: null });
    expect(types(missed.actions)).toEqual(["stop", "note:kill"]);
    expect(missed.state.kills[0]).toMatchObject({ landed: false });
    expect(missed.state.deploy).toBeNull();
  });

  it("later kills target the next build, and every later controller runs it", () => {
    const state = begun(plan([task("t01"), task("t02"), task("t03")], [{ kind: "KD", atMs: 500 }, { kind: "K1", atMs: 500 }]));
    const fired = nextWaveStep(state, poll(3000, [run("t01"), run("t02")], { inFlightRunId: "run-t01" }));
    const up = restart(fired.state, fired.actions);
    // No kill fires while the deploy is under way, whatever is in flight.
    const during = nextWaveStep(up.state, poll(4600, [run("t01"), run("t02")], { inFlightRunId: "run-t02" }));
    expect(of(during.actions, "stop")).toEqual([]);
    const found = nextWaveStep(nextWaveStep(up.state, poll(5000, [run("t01"), run("t02")])).state, { kind: "run_in_flight", kill: 0, runId: "run-t01" });
    const after = takeover(found.state, "boot-2").state;
    expect(after.controller).toMatchObject({ pid: 102, bootId: "boot-2" });
    const k1 = nextWaveStep(after, poll(6000, [run("t01", { executorBootId: "boot-2" }), run("t02")], { inFlightRunId: "run-t01" }));
    expect(k1.actions[0]).toEqual({ type: "stop", pid: 102, signal: "SIGKILL" });
    expect(of(k1.actions, "start")[0]).toMatchObject({ build: "next", reason: { as: "restart", kill: 1 } });
  });

  it("a controller started before any KD runs this build", () => {
    const { actions } = fire("K1");
    expect(of(actions, "start")[0]).not.toHaveProperty("build");
  });

  it("in a simulated wave with K1 and KD, every kill fires and lands", () => {
    // Runs long enough (4 s) to be still in session once the next build is up and the overlap is over.
    const long = { turns: 10 };
    const p = plan([task("t01", long), task("t02", long), task("t03", long), task("t04", long)], [{ kind: "K1", atMs: 600 }, { kind: "KD", atMs: 600 }]);
    const end = simulate(p, initialWaveState(p, { retries: 1, quiesceMs: 20_000, timeoutMs: 240_000, deadlineAtMs: 240_000, silenceMs: 6000 }));
    expect(end.phase).toBe("done");
    expect(end.kills.map((k) => [k.kind, k.landed])).toEqual([["K1", true], ["KD", true]]);
    expect(end.build).toBe("next");
  });

  it("is planned like any kill: the seeded plan and the held-back tasks count it", () => {
    const seeded = planWave({ seed: 4242, tasks: 4, kills: ["K1", "KD"], faults: [], concurrency: 2 });
    expect(seeded.kills.map((k) => k.kind).sort()).toEqual(["K1", "KD"]);
    expect(tasksHeldBack(seeded)).toHaveLength(1);
    expect(controller(2, 0).pid).toBe(102);
  });
});
