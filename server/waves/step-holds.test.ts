import { describe, expect, it } from "vitest";
import { planWave } from "./plan";
import { initialWaveState, nextWaveStep } from "./step";
import { begun, CONFIG, done, of, plan, poll, restart, run, simulate, task } from "../test/wave-step";

/**
 * The bug a wave had (docs/waves.md, "Work is held back for the kills"): its tasks all ended
 * before its last kills, which then never fired. Held-back tasks, released when a kill needs
 * work, and a K5's woken controller drained then, make every planned kill land.
 */

describe("every planned kill lands: work is held back until the kills need it (seed 4817's wave)", () => {
  it("a due kill whose target has no work releases a held task instead of the wave settling", () => {
    const state = begun(plan([task("t01"), task("t02"), task("t03")], [{ kind: "K1", atMs: 500 }, { kind: "K2", atMs: 500 }]));
    expect(state.held).toEqual(["t03"]);
    const first = nextWaveStep(state, poll(3000, [run("t01"), run("t02")], { inFlightRunId: "run-t01" }));
    const up = restart(first.state, first.actions, 4000).state;
    // Everything submitted has settled before K2 is due: nothing yet.
    const early = nextWaveStep(up, poll(4200, [done("t01"), done("t02")], { cleanupDone: true }));
    expect(early.actions).toEqual([]);
    // Due, and nothing for it: t03 is released; the wave does not settle.
    const due = nextWaveStep(early.state, poll(4600, [done("t01"), done("t02")], { cleanupDone: true }));
    expect(due.actions).toEqual([{ type: "submit", key: "t03" }, { type: "note", kind: "hold", detail: "t03 released: K2 is due and controller #2 has no work" }]);
    expect(due.state.held).toEqual([]);
    // On its run in flight, K2 fires.
    const fired = nextWaveStep(due.state, poll(5200, [done("t01"), done("t02"), run("t03", { executorBootId: "boot-2" })], { inFlightRunId: "run-t03" }));
    expect(fired.actions[0]).toEqual({ type: "stop", pid: 102, signal: "SIGTERM" });
  });

  it("no release while the target has work coming (a queued run, one its restart recovers, a Retry about to be made)", () => {
    const state = begun(plan([task("t01"), task("t02"), task("t03")], [{ kind: "K1", atMs: 500 }, { kind: "K2", atMs: 500 }]));
    expect(of(nextWaveStep(state, poll(3000, [run("t01", { status: "queued", executorBootId: null })])).actions, "submit")).toEqual([]);
    expect(of(nextWaveStep(state, poll(3000, [run("t01", { status: "suspended", executorBootId: "boot-dead" })])).actions, "submit")).toEqual([]);
    const retryable = run("t01", { status: "failed", outcome: "terminal_failure", canRetry: true });
    expect(of(nextWaveStep(state, poll(3000, [retryable, done("t02")])).actions, "submit")).toEqual([]);
  });

  it("a woken K5 controller is drained once the next kill is due; then its runs are the target's work, and with none a held task is released", () => {
    const p = plan([task("t01"), task("t02"), task("t03")], [{ kind: "K5", atMs: 500 }, { kind: "K1", atMs: 500 }]);
    const s0 = begun(p);
    const fired = nextWaveStep(s0, poll(3000, [run("t01"), run("t02")], { inFlightRunId: "run-t01" }));
    const up = restart(fired.state, fired.actions, 4000);
    const found = nextWaveStep(up.state, { kind: "run_in_flight", kill: 0, runId: "run-t01" });
    const woken = nextWaveStep(found.state, { kind: "takeover", kill: 0, atMs: 12_000, takenBy: "boot-2", reason: "silent_for_7s", ended: null, stalledMs: 7000, silentForMs: 7000 }).state;
    // Not yet due: left running.
    expect(nextWaveStep(woken, poll(4200, [run("t01", { executorBootId: "boot-1" }), done("t02")])).actions).toEqual([]);
    // Due: drained, and nothing else decided on that poll.
    const drain = nextWaveStep(woken, poll(13_000, [run("t01", { executorBootId: "boot-1" }), done("t02")]));
    expect(drain.actions).toEqual([
      { type: "note", kind: "drain", detail: "the woken K5 controller pid 101 is drained (SIGTERM): K1 is due" },
      { type: "stop", pid: 101, signal: "SIGTERM" },
    ]);
    expect(drain.state.drained).toEqual([101]);
    // The run it held, suspended by the drain, is the target's to recover: no release.
    expect(nextWaveStep(drain.state, poll(13_200, [run("t01", { status: "suspended", executorBootId: "boot-1" }), done("t02")])).actions).toEqual([]);
    // It held none: t03 is released.
    expect(of(nextWaveStep(drain.state, poll(13_200, [done("t01"), done("t02")])).actions, "submit")).toEqual([{ type: "submit", key: "t03" }]);
  });

  it("an armed K4 whose crash point nothing would reach gets a held task, not 'not reachable'", () => {
    const p = plan([task("t01"), task("t02")], [{ kind: "K4", atMs: 500, crashAt: "after_create" }]);
    const s0 = begun(p);
    expect(s0.held).toEqual(["t02"]);
    const fired = nextWaveStep(s0, poll(3000, [run("t01")], { inFlightRunId: "run-t01" }));
    const armed = restart(fired.state, fired.actions).state;
    const { state, actions } = nextWaveStep(armed, poll(6000, [done("t01")], { cleanupDone: true }));
    expect(of(actions, "submit")).toEqual([{ type: "submit", key: "t02" }]);
    expect(state.kills[0]!.detail).toBe("armed controller pid 102 waits for after_create");
    expect(state.armed).toBe(0);
  });

  it("releases every held task once the last kill has fired", () => {
    const p = plan([task("t01"), task("t02"), task("t03"), task("t04")], [{ kind: "K1", atMs: 500 }, { kind: "K2", atMs: 500 }]);
    const s0 = begun(p);
    expect(s0.held).toEqual(["t04"]);
    // K1 and K2 land on t01..t03's work; then t04 is released, though nothing needs it.
    const k1 = nextWaveStep(s0, poll(3000, [run("t01"), run("t02"), run("t03")], { inFlightRunId: "run-t01" }));
    const s1 = restart(k1.state, k1.actions, 4000).state;
    const k2 = nextWaveStep(s1, poll(5000, [run("t01", { executorBootId: "boot-2" })], { inFlightRunId: "run-t01" }));
    expect(of(k2.actions, "submit")).toEqual([{ type: "submit", key: "t04" }]);
    expect(k2.state.held).toEqual([]);
  });

  it("a wave with no task left to hold back names it when a kill never fired", () => {
    const s0 = begun(plan([task("t01")], [{ kind: "K1", atMs: 500 }, { kind: "K2", atMs: 500 }]));
    const { state } = nextWaveStep(s0, poll(5000, [done("t01")], { cleanupDone: true }));
    expect(state.kills.map((k) => k.detail)).toEqual([
      "never fired: every task settled before its target controller had work in flight, and no task was left to hold back for it (2 kill(s) over 1 task(s))",
      "never fired: every task settled before its target controller had work in flight, and no task was left to hold back for it (2 kill(s) over 1 task(s))",
    ]);
  });

  it("in a simulated seed-4817 wave every kill lands; with nothing held back K1 and K4 never fire (the bug)", () => {
    const seeded = planWave({ seed: 4817, tasks: 8, kills: ["K1", "K2", "K4", "K5", "K15"], faults: ["outage", "archive", "slow_start", "rate_limit", "bind", "reject"], concurrency: 3 });
    const withHolds = simulate(seeded, initialWaveState(seeded, CONFIG));
    expect(withHolds.kills.map((k) => [k.kind, k.landed])).toEqual(seeded.kills.map((k) => [k.kind, true]));
    const without = simulate(seeded, { ...initialWaveState(seeded, CONFIG), held: [] });
    expect(without.kills.filter((k) => k.firedAtMs === null).map((k) => k.kind)).toEqual(["K1", "K4"]);
  });

  it("in a simulated seed-5923 wave (its K5 third, its K4 at after_create last) every kill lands", () => {
    const seeded = planWave({ seed: 5923, tasks: 8, kills: ["K1", "K2", "K4", "K5", "K15"], faults: ["outage", "archive", "slow_start", "rate_limit", "bind", "reject"], concurrency: 3 });
    const end = simulate(seeded, initialWaveState(seeded, CONFIG));
    expect(end.kills.map((k) => [k.kind, k.landed])).toEqual(seeded.kills.map((k) => [k.kind, true]));
    expect(end.drained).toHaveLength(1);
  });
});
