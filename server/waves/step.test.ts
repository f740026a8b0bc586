import { describe, expect, it } from "vitest";
import { FAULT_NAMES, KILL_KINDS, type FaultName, type KillKind } from "../shared/wave-report";
import { planWave, tasksHeldBack, type PlannedKill } from "./plan";
import { faultRule } from "./run/fault-rules";
import { initialWaveState, nextWaveStep, type WaveObservation } from "./step";
import { begun, CONFIG, done, fire, of, plan, poll, restart, run, task, types } from "../test/wave-step";

/**
 * The wave's decisions (server/waves/step.ts, docs/rules.md §5), pure: every kill kind, the
 * faults that land with the first kill, Retry clicks, settling, and the held-back tasks that let
 * every planned kill find work in flight.
 */

describe("a wave's start", () => {
  it("submits the tasks it does not hold back, notes the held ones, then starts the first controller", () => {
    const p = plan([task("t01"), task("t02"), task("t03"), task("t04")], [{ kind: "K1", atMs: 600 }, { kind: "K2", atMs: 600 }]);
    const { state, actions } = nextWaveStep(initialWaveState(p, CONFIG), { kind: "begin", atMs: 0 });
    expect(types(actions)).toEqual(["submit", "submit", "submit", "note:hold", "start"]);
    expect(of(actions, "submit").map((a) => a.key)).toEqual(["t01", "t02", "t03"]);
    expect(state.held).toEqual(["t04"]);
    expect(of(actions, "start")[0]).toMatchObject({ why: "first", generation: 1, reason: { as: "first" } });
  });
});

describe("tasksHeldBack (server/waves/plan.ts)", () => {
  it("one task per kill after the first and one more for a K4, from the end, never the archive's, never every task", () => {
    const k = (kind: KillKind): PlannedKill => ({ kind, atMs: 600 });
    expect(tasksHeldBack(plan([task("t01"), task("t02")], [k("K1")]))).toEqual([]);
    expect(tasksHeldBack(plan([task("t01"), task("t02"), task("t03")], [k("K1"), k("K2")]))).toEqual(["t03"]);
    expect(tasksHeldBack(plan([task("t01"), task("t02"), task("t03")], [k("K4")]))).toEqual(["t03"]);
    expect(tasksHeldBack(plan([task("t01"), task("t02"), task("t03", { faults: ["archive"] })], [k("K1"), k("K2")]))).toEqual(["t02"]);
    expect(tasksHeldBack(plan([task("t01")], [k("K1"), k("K2"), k("K4")]))).toEqual([]);
    const seeded = planWave({ seed: 4817, tasks: 8, kills: ["K1", "K2", "K4", "K5", "K15"], faults: ["outage", "archive", "slow_start", "rate_limit", "bind", "reject"], concurrency: 3 });
    expect(tasksHeldBack(seeded)).toHaveLength(5);
    expect(tasksHeldBack(seeded)).not.toContain(seeded.tasks.find((t) => t.faults.includes("archive"))!.key);
  });
});

describe("a kill fires after its delay, on work in flight on its target", () => {
  const state = begun(plan([task("t01"), task("t02")], [{ kind: "K1", atMs: 500 }]));

  it("not before its delay after the target was ready", () => {
    const { actions } = nextWaveStep(state, poll(1400, [run("t01")], { inFlightRunId: "run-t01" }));
    expect(of(actions, "stop")).toEqual([]);
  });

  it("not while the target has nothing in flight", () => {
    const { actions, state: after } = nextWaveStep(state, poll(3000, [run("t01", { status: "starting" })]));
    expect(of(actions, "stop")).toEqual([]);
    expect(after.next).toBe(0);
  });

  it("not while the first kill's archive has no sandbox in session to archive", () => {
    const { actions } = nextWaveStep(state, poll(3000, [run("t01")], { inFlightRunId: "run-t01", archiveReady: false }));
    expect(of(actions, "stop")).toEqual([]);
  });
});

describe("each kill kind", () => {
  it("K1: SIGKILL, the first kill's faults, the forecast, a restart; landed once the restart is up", () => {
    const { state, actions } = fire("K1");
    expect(types(actions)).toEqual(["stop", "note:kill", "land_faults", "forecast", "start"]);
    expect(actions[0]).toEqual({ type: "stop", pid: 101, signal: "SIGKILL" });
    expect(of(actions, "forecast")[0]).toEqual({ type: "forecast", kill: "K1", bootId: "boot-1" });
    expect(state.kills[0]).toMatchObject({ firedAtMs: 3000, targetPid: 101, interruptedRunId: "run-t01", landed: false });
    const after = restart(state, actions).state;
    expect(after.kills[0]).toMatchObject({ landed: true, restartPid: 102, detail: "interrupted run run-t01 in flight" });
    expect(after.controller?.pid).toBe(102);
  });

  it("K2: SIGTERM (a drain); landed only when the drained run was suspended", () => {
    const { state, actions } = fire("K2");
    expect(actions[0]).toEqual({ type: "stop", pid: 101, signal: "SIGTERM" });
    const up = restart(state, actions);
    expect(up.actions).toEqual([{ type: "check_drain", kill: 0, runId: "run-t01", sinceMs: 3000 }]);
    expect(nextWaveStep(up.state, { kind: "drained", kill: 0, suspended: true }).state.kills[0]).toMatchObject({ landed: true, detail: "drained: run run-t01 suspended" });
    expect(nextWaveStep(up.state, { kind: "drained", kill: 0, suspended: false }).state.kills[0]).toMatchObject({ landed: false, detail: "fired again after: the drain did not suspend run run-t01" });
  });

  it("K15: SIGKILL and a restart with a fresh home", () => {
    const { state, actions } = fire("K15");
    expect(actions[0]).toEqual({ type: "stop", pid: 101, signal: "SIGKILL" });
    expect(of(actions, "start")[0]).toMatchObject({ freshHome: true, reason: { as: "restart", kill: 0 } });
    expect(restart(state, actions).state.kills[0]!.landed).toBe(true);
  });

  describe("K4: SIGKILL, then a controller armed to die at its crash point", () => {
    const armedAt = (crashAt: "after_create" | "during_teardown_claim", tasks = [task("t01"), task("t02")]) => {
      const { state, actions } = fire("K4", { crashAt }, tasks);
      expect(actions[0]).toEqual({ type: "stop", pid: 101, signal: "SIGKILL" });
      expect(of(actions, "start")[0]).toMatchObject({ crashAt, reason: { as: "armed", kill: 0 } });
      return restart(state, actions).state;
    };

    it.each(["after_create", "during_teardown_claim"] as const)("%s: armed, not landed until the crash point", (crashAt) => {
      const armed = armedAt(crashAt);
      expect(armed.armed).toBe(0);
      expect(armed.kills[0]).toMatchObject({ landed: false, restartPid: 102, interruptedRunId: null, detail: `armed controller pid 102 waits for ${crashAt}` });
    });

    it("lands when the armed controller dies at its crash point by its own hand, and a controller follows", () => {
      const armed = armedAt("after_create");
      const exit = { pid: 102, code: "SIGKILL", diedAtMs: 5000, byWave: false, crash: { point: "after_create", runId: "run-t02", leaseId: null } };
      const { state, actions } = nextWaveStep(armed, poll(5100, [run("t01"), run("t02")], { exited: exit }));
      expect(types(actions)).toEqual(["note:crash", "start"]);
      expect(of(actions, "start")[0]).toMatchObject({ reason: { as: "after_crash", kill: 0 } });
      expect(state.kills[0]).toMatchObject({ landed: true, crashPointAtMs: 5000, interruptedRunId: "run-t02", detail: "crash point after_create reached in run run-t02" });
      expect(state.armed).toBeNull();
      expect(restart(state, actions, 6000).state.kills[0]!.restartPid).toBe(103);
    });

    it("does not land when the armed controller exits without its crash line, or the wave signalled it", () => {
      const armed = armedAt("after_create");
      const plainExit = { pid: 102, code: "1", diedAtMs: 5000, byWave: false, crash: null };
      const a = nextWaveStep(armed, poll(5100, [run("t01")], { exited: plainExit }));
      expect(a.state.kills[0]).toMatchObject({ landed: false, detail: "the armed controller exited (1) without reaching after_create" });
      expect(types(a.actions)).toEqual(["note:restart", "start"]);
      const byWave = nextWaveStep(armed, poll(5100, [run("t01")], { exited: { ...plainExit, byWave: true, crash: { point: "after_create", runId: null, leaseId: null } } }));
      expect(byWave.state.kills[0]!.landed).toBe(false);
    });

    it("holds the next kill while armed", () => {
      const state = begun(plan([task("t01"), task("t02")], [{ kind: "K4", atMs: 500, crashAt: "after_create" }, { kind: "K1", atMs: 0 }]));
      const fired = nextWaveStep(state, poll(3000, [run("t01"), run("t02")], { inFlightRunId: "run-t01" }));
      const armed = restart(fired.state, fired.actions).state;
      const { actions } = nextWaveStep(armed, poll(9000, [run("t01", { executorBootId: "boot-2" })], { inFlightRunId: "run-t01" }));
      expect(of(actions, "stop")).toEqual([]);
    });

    it("is not reachable once every task settled, nothing is held back and the cleanup is done", () => {
      // One task: none is held back for the K4 (server/waves/plan.ts `tasksHeldBack`).
      const armed = armedAt("during_teardown_claim", [task("t01")]);
      expect(armed.held).toEqual([]);
      const { state, actions } = nextWaveStep(armed, poll(9000, [done("t01")], { cleanupDone: true }));
      expect(state.kills[0]!.detail).toBe("crash point during_teardown_claim not reachable: every task had settled and nothing was left to create or tear down");
      expect(of(actions, "note")[0]!.detail).toMatch(/^K4 did not land: /);
    });
  });

  describe("K5: another host up, a stall past the silence window, a wake", () => {
    const stalled = () => {
      const { state, actions } = fire("K5");
      expect(types(actions)).toEqual(["land_faults", "start"]);
      expect(of(actions, "start")[0]).toMatchObject({ why: "K5: another host", freshHome: true, pidNamespace: true, reason: { as: "other_host", kill: 0 } });
      const up = restart(state, actions);
      expect(up.actions).toEqual([{ type: "find_run_in_flight", kill: 0, bootId: "boot-1", pid: 101 }]);
      expect(up.state.controller?.pid).toBe(102);
      const found = nextWaveStep(up.state, { kind: "run_in_flight", kill: 0, runId: "run-t02" });
      expect(found.actions).toEqual([
        { type: "stall", pid: 101 },
        { type: "forecast", kill: "K5", bootId: "boot-1" },
        { type: "note", kind: "kill", detail: "K5: SIGSTOP pid 101 with run run-t02 in flight; pid 102 on another host" },
        { type: "watch_takeover", kill: 0, runId: "run-t02", stalledBootId: "boot-1", pid: 101 },
      ]);
      return found.state;
    };
    const takeover = (over: Partial<Extract<WaveObservation, { kind: "takeover" }>>) =>
      nextWaveStep(stalled(), { kind: "takeover", kill: 0, atMs: 12_000, takenBy: "boot-2", reason: "silent_for_7s", ended: null, stalledMs: 7200, silentForMs: 7700, ...over });

    it("lands when the other host took the run over by silence; the stalled one is woken and left running", () => {
      const { state, actions } = takeover({});
      expect(actions[0]).toEqual({ type: "wake", pid: 101 });
      expect(state.kills[0]).toMatchObject({ landed: true, interruptedRunId: "run-t02", takeoverAtMs: 12_000, takeoverReason: "silent_for_7s", restartPid: 102 });
      expect(state.kills[0]!.detail).toBe(
        "stalled pid 101 7.2 s (7.7 s since its last heartbeat; the window is 6 s); run run-t02 taken over by pid 102 on another host (judged silent_for_7s); the stalled one woken and left running",
      );
      expect(state.bystanders.map((b) => b.pid)).toEqual([101]);
      expect(state.stalling).toBeNull();
    });

    it("does not land on a takeover that was not by silence, nor without one", () => {
      expect(takeover({ reason: "exited" }).state.kills[0]).toMatchObject({ landed: false, detail: expect.stringMatching(/, not by silence;/) });
      expect(takeover({ takenBy: null, reason: null, ended: "succeeded" }).state.kills[0]).toMatchObject({ landed: false, takeoverAtMs: null, detail: "fired again after: run run-t02 was not taken over within 7.2 s of the stall (it succeeded first)" });
    });

    it("does not land when no run is in session on the target once the other host is up", () => {
      const { state, actions } = fire("K5");
      const up = restart(state, actions);
      const missed = nextWaveStep(up.state, { kind: "run_in_flight", kill: 0, runId: null });
      expect(missed.state.kills[0]).toMatchObject({ landed: false, detail: "fired again after: no run was in session on pid 101 once the other host was up (run run-t01 had been)" });
      expect(missed.state.bystanders.map((b) => b.pid)).toEqual([101]);
      expect(of(missed.actions, "stall")).toEqual([]);
    });
  });

  it("every kill kind of the vocabulary has its actions", () => {
    for (const kind of KILL_KINDS) {
      const { actions, state } = fire(kind, kind === "K4" ? { crashAt: "after_create" } : {});
      expect(of(actions, "start"), kind).toHaveLength(1);
      expect(state.next, kind).toBe(1);
    }
  });
});

describe("the faults of the plan's vocabulary", () => {
  it.each(FAULT_NAMES)("%s: a rule on its task's run at submission, or landed with the first kill", (fault: FaultName) => {
    const rule = faultRule(fault, "run-x");
    if (fault === "outage" || fault === "archive") {
      expect(rule).toBeNull();
      // Every kill kind lands the first kill's faults before anything restarts.
      for (const kind of KILL_KINDS) {
        const a = types(fire(kind, kind === "K4" ? { crashAt: "after_create" } : {}).actions);
        expect(a.indexOf("land_faults"), kind).toBeGreaterThanOrEqual(0);
        expect(a.indexOf("land_faults"), kind).toBeLessThan(a.indexOf("start"));
      }
    } else {
      expect(rule?.match).toEqual({ runId: "run-x" });
    }
    // Its task is submitted at the start unless held back for a kill; an archive's never is held.
    const p = plan([task("t01"), task("t02"), task("t03", { faults: [fault] })], [{ kind: "K1", atMs: 500 }, { kind: "K2", atMs: 500 }]);
    expect(tasksHeldBack(p).includes("t03")).toBe(fault !== "archive");
  });
});

describe("Retry, like an impatient board user", () => {
  const failed = (key: string, canRetry = true) => run(key, { status: "failed", outcome: "terminal_failure", failureCode: "native_provider_startup_rejected", canRetry });
  const state = begun(plan([task("t01"), task("t02")], []));

  it("double-clicks Retry on a terminal failure that offers it, until the limit", () => {
    const first = nextWaveStep(state, poll(2000, [failed("t01"), run("t02")]));
    expect(of(first.actions, "retry")).toEqual([{ type: "retry", key: "t01", runId: "run-t01", failureCode: "native_provider_startup_rejected", clicks: 2 }]);
    const clicked = nextWaveStep(first.state, { kind: "retried", key: "t01", successors: 1 }).state;
    expect(clicked.retried).toEqual({ t01: 1 });
    const again = nextWaveStep(clicked, poll(2200, [failed("t01"), run("t02")]));
    expect(of(again.actions, "retry")).toEqual([]);
  });

  it("clicks again on a poll after a Retry no click of which was taken", () => {
    const first = nextWaveStep(state, poll(2000, [failed("t01")]));
    const refused = nextWaveStep(first.state, { kind: "retried", key: "t01", successors: 0 }).state;
    expect(of(nextWaveStep(refused, poll(2200, [failed("t01")])).actions, "retry")).toHaveLength(1);
  });

  it("twice where the wave makes two Retries", () => {
    let s = begun(plan([task("t01")], []), { ...CONFIG, retries: 2 });
    for (const atMs of [2000, 2200]) {
      const step = nextWaveStep(s, poll(atMs, [failed("t01")]));
      expect(of(step.actions, "retry"), `at ${atMs}`).toHaveLength(1);
      s = nextWaveStep(step.state, { kind: "retried", key: "t01", successors: 1 }).state;
    }
    expect(of(nextWaveStep(s, poll(2400, [failed("t01")])).actions, "retry")).toEqual([]);
  });

  it("never where the catalogue offers none", () => {
    expect(of(nextWaveStep(state, poll(2000, [failed("t01", false), run("t02")])).actions, "retry")).toEqual([]);
  });
});

describe("settling", () => {
  const state = begun(plan([task("t01"), task("t02")], []));

  it("judges once every task is at rest and the sweeps finished the cleanup", () => {
    const { actions, state: after } = nextWaveStep(state, poll(5000, [done("t01"), done("t02")], { cleanupDone: true }));
    expect(actions).toEqual([{ type: "judge", reason: "settled" }]);
    expect(after.phase).toBe("done");
  });

  it("waits for the cleanup, at most the quiesce time", () => {
    const waiting = nextWaveStep(state, poll(5000, [done("t01"), done("t02")]));
    expect(waiting.actions).toEqual([]);
    expect(waiting.state.settledSinceMs).toBe(5000);
    expect(nextWaveStep(waiting.state, poll(20_000, [done("t01"), done("t02")])).actions).toEqual([]);
    expect(nextWaveStep(waiting.state, poll(25_001, [done("t01"), done("t02")])).actions).toEqual([{ type: "judge", reason: "settled" }]);
  });

  it("not while a task runs, a Retry is still to make, or a task never ran", () => {
    expect(nextWaveStep(state, poll(5000, [done("t01"), run("t02")], { cleanupDone: true })).actions).toEqual([]);
    const retryable = run("t02", { status: "failed", outcome: "terminal_failure", canRetry: true });
    expect(types(nextWaveStep(state, poll(5000, [done("t01"), retryable], { cleanupDone: true })).actions)).toEqual(["retry"]);
    expect(nextWaveStep(state, poll(5000, [done("t01")], { cleanupDone: true })).actions).toEqual([]);
  });

  it("a terminal failure whose Retries are made (or not offered) is at rest", () => {
    const noRetry = run("t02", { status: "failed", outcome: "terminal_failure", canRetry: false });
    expect(nextWaveStep(state, poll(5000, [done("t01"), noRetry], { cleanupDone: true })).actions).toEqual([{ type: "judge", reason: "settled" }]);
  });

  it("gives up at the deadline, saying so", () => {
    const { actions } = nextWaveStep(state, poll(240_001, [run("t01")]));
    expect(actions).toEqual([{ type: "note", kind: "timeout", detail: "tasks did not settle within 240 s" }, { type: "judge", reason: "timeout" }]);
  });

  it("restarts a target that exited on its own, deciding nothing else on that poll", () => {
    const exit = { pid: 101, code: "1", diedAtMs: 3000, byWave: false, crash: null };
    const { actions } = nextWaveStep(state, poll(3100, [done("t01"), done("t02")], { exited: exit, cleanupDone: true }));
    expect(actions).toEqual([
      { type: "note", kind: "restart", detail: "controller pid 101 exited (1); starting another" },
      { type: "start", why: "after an exit", generation: 2, reason: { as: "after_exit" } },
    ]);
  });
});

describe("a kill that fired and did not land is fired again (server/waves/step-refire.ts)", () => {
  it("a K2 whose drain did not suspend its run fires again on the next work in flight, and lands then", () => {
    const { state, actions } = fire("K2");
    const up = restart(state, actions);
    const missed = nextWaveStep(up.state, { kind: "drained", kill: 0, suspended: false });
    expect(missed.state.next).toBe(0);
    expect(missed.state.kills[0]).toMatchObject({ landed: false, firedAtMs: null, detail: "fired again after: the drain did not suspend run run-t01" });
    expect(types(missed.actions)).toEqual(["note:kill"]);
    // Due again on the restarted controller (#2, ready at 4000 ms), on its run in flight.
    const again = nextWaveStep(missed.state, poll(5000, [run("t01"), run("t02")], { inFlightRunId: "run-t02" }));
    expect(again.actions[0]).toEqual({ type: "stop", pid: 102, signal: "SIGTERM" });
    expect(again.state.kills[0]).toMatchObject({ firedAtMs: 5000, interruptedRunId: "run-t02" });
    const upAgain = restart(again.state, again.actions, 6000);
    expect(nextWaveStep(upAgain.state, { kind: "drained", kill: 0, suspended: true }).state.kills[0]).toMatchObject({ landed: true, detail: "drained: run run-t02 suspended" });
  });

  it("at most twice: a third miss stays a miss", () => {
    let { state, actions } = fire("K2");
    for (let i = 0; i < 3; i++) {
      const up = restart(state, actions, 4000 + i * 2000);
      state = nextWaveStep(up.state, { kind: "drained", kill: 0, suspended: false }).state;
      if (i < 2) {
        expect(state.next).toBe(0);
        ({ state, actions } = nextWaveStep(state, poll(5000 + i * 2000, [run("t01"), run("t02")], { inFlightRunId: "run-t01" })));
      }
    }
    expect(state.next).toBe(1);
    expect(state.refired[0]).toBe(2);
    expect(state.kills[0]!.landed).toBe(false);
  });

  it("a K5 with no run left in session on its stalled target fires again", () => {
    const { state, actions } = fire("K5");
    const up = restart(state, actions);
    const missed = nextWaveStep(up.state, { kind: "run_in_flight", kill: 0, runId: null });
    expect(missed.state.next).toBe(0);
    expect(missed.state.kills[0]!.detail).toMatch(/^fired again after: no run was in session on pid 101/);
  });

  it("is not fired again once a later kill has fired: the plan's order holds", () => {
    const state = begun(plan([task("t01"), task("t02"), task("t03")], [{ kind: "K2", atMs: 500 }, { kind: "K1", atMs: 500 }]));
    const first = nextWaveStep(state, poll(3000, [run("t01"), run("t02")], { inFlightRunId: "run-t01" }));
    const up = restart(first.state, first.actions);
    const second = nextWaveStep(up.state, poll(5000, [run("t01"), run("t02")], { inFlightRunId: "run-t02" }));
    expect(second.state.next).toBe(2);
    const late = nextWaveStep(second.state, { kind: "drained", kill: 0, suspended: false });
    expect(late.state.next).toBe(2);
    expect(late.state.kills[0]).toMatchObject({ landed: false, detail: "the drain did not suspend run run-t01" });
  });
});
