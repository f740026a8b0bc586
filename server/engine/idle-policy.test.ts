import { describe, expect, it } from "vitest";
import { fc, test as fcTest } from "@fast-check/vitest";
import { AUTO_DELETE_NEVER, AUTO_STOP_MARGIN_MINUTES, MIN_AUTO_DELETE_MINUTES, sandboxIdlePolicy } from "./idle-policy";

const base = { turnBudgetMs: 30 * 60_000, turnDeadlineMarginMs: 30_000, autoStopMinutes: null, autoDeleteMinutes: 1440 };

describe("the sandbox's idle policy", () => {
  it("derives auto-stop from the turn's longest life, rounded up to minutes, plus the margin", () => {
    // 30 min budget + 30 s margin → 31 min, + 5.
    expect(sandboxIdlePolicy(base)).toEqual({ autoStopMinutes: 31 + AUTO_STOP_MARGIN_MINUTES, autoDeleteMinutes: 1440, autoStopFloorMinutes: 36 });
    expect(sandboxIdlePolicy({ ...base, turnBudgetMs: 1_000, turnDeadlineMarginMs: 0 }).autoStopMinutes).toBe(1 + AUTO_STOP_MARGIN_MINUTES);
  });

  it("takes a longer setting as it is and raises a shorter one to the floor: a running turn never reaches it", () => {
    expect(sandboxIdlePolicy({ ...base, autoStopMinutes: 120 }).autoStopMinutes).toBe(120);
    expect(sandboxIdlePolicy({ ...base, autoStopMinutes: 15 }).autoStopMinutes).toBe(36);
    // A run with a two-hour budget of its own.
    expect(sandboxIdlePolicy({ ...base, turnBudgetMs: 2 * 3600_000, autoStopMinutes: 60 }).autoStopMinutes).toBe(121 + AUTO_STOP_MARGIN_MINUTES);
  });

  it("auto-delete: -1 stays never, 0 (delete at stop) and short values are raised to an hour", () => {
    expect(sandboxIdlePolicy({ ...base, autoDeleteMinutes: -1 }).autoDeleteMinutes).toBe(AUTO_DELETE_NEVER);
    expect(sandboxIdlePolicy({ ...base, autoDeleteMinutes: 0 }).autoDeleteMinutes).toBe(MIN_AUTO_DELETE_MINUTES);
    expect(sandboxIdlePolicy({ ...base, autoDeleteMinutes: 5 }).autoDeleteMinutes).toBe(MIN_AUTO_DELETE_MINUTES);
  });

  fcTest.prop([fc.integer({ min: 0, max: 24 * 3600_000 }), fc.integer({ min: 0, max: 120_000 }), fc.option(fc.integer({ min: 0, max: 100_000 }))])(
    "never 0, and never shorter than the turn's budget plus its margin",
    (turnBudgetMs, turnDeadlineMarginMs, autoStopMinutes) => {
      const p = sandboxIdlePolicy({ turnBudgetMs, turnDeadlineMarginMs, autoStopMinutes, autoDeleteMinutes: 1440 });
      expect(p.autoStopMinutes).toBeGreaterThan(0);
      expect(p.autoStopMinutes * 60_000).toBeGreaterThanOrEqual(turnBudgetMs + turnDeadlineMarginMs + AUTO_STOP_MARGIN_MINUTES * 60_000);
      expect(Number.isInteger(p.autoStopMinutes)).toBe(true);
    },
  );
});
