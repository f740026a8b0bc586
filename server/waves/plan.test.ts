import { fc, test } from "@fast-check/vitest";
import { describe, expect, it } from "vitest";
import { FAULT_NAMES, KILL_KINDS } from "../shared/wave-report";
import { planWave, waveId } from "./plan";

const options = { tasks: 6, kills: [...KILL_KINDS], faults: [...FAULT_NAMES], concurrency: 2 };

describe("planWave", () => {
  test.prop([fc.integer({ min: 0, max: 2 ** 31 - 1 })])("the same seed gives the same plan", (seed) => {
    expect(planWave({ seed, ...options })).toEqual(planWave({ seed, ...options }));
  });

  it("different seeds give different plans", () => {
    expect(planWave({ seed: 1, ...options })).not.toEqual(planWave({ seed: 2, ...options }));
  });

  test.prop([fc.integer({ min: 0, max: 2 ** 31 - 1 }), fc.integer({ min: 4, max: 20 })])("every fault and kill kind is planned once", (seed, tasks) => {
    const plan = planWave({ seed, ...options, tasks });
    expect(plan.tasks).toHaveLength(tasks);
    expect(plan.tasks.flatMap((t) => t.faults).sort()).toEqual([...FAULT_NAMES].sort());
    expect(plan.kills.map((k) => k.kind).sort()).toEqual([...KILL_KINDS].sort());
    // Each delay counts from its own target controller's readiness: short, not cumulative.
    expect(plan.kills.every((k) => k.atMs >= 600 && k.atMs <= 2000)).toBe(true);
    expect(plan.kills.filter((k) => k.kind === "K4").every((k) => k.crashAt === "after_create" || k.crashAt === "during_teardown_claim")).toBe(true);
  });

  it("names waves by their UTC start and seed", () => {
    expect(waveId(new Date("2026-11-12T01:08:00.123Z"), 6402)).toBe("w-20261112T010800-s6402");
  });
});
