import { describe, expect, it } from "vitest";
import { fc, test as fcTest } from "@fast-check/vitest";
import { isSilent, silenceCutoff } from "./silence";
import { classifyStuck, STUCK_REASONS, stuckCutoffs, TURN_OVERDUE_GRACE_MS, turnLimitMs, type StuckFacts, type StuckLimits } from "./stuck";

const NOW = new Date("2026-12-06T10:00:00.000Z");
const ago = (ms: number) => new Date(NOW.getTime() - ms);
const LIMITS: StuckLimits = { silenceWindowMs: 20_000, maxAgeMs: 6 * 3600_000, maxTurnMs: 40 * 60_000 };

/** A healthy running run: a live executor, a young turn, no wait, no back-off. */
function facts(over: Partial<StuckFacts> = {}): StuckFacts {
  return {
    status: "running",
    phase: "session_open",
    createdAt: ago(60_000),
    providerWaitSince: null,
    recoveryAttempts: 0,
    recoveryNotBefore: null,
    executorBootId: "boot-a",
    executorLastSeenAt: ago(1_000),
    turnsDone: 1,
    turnsPlanned: 3,
    turnSince: ago(5_000),
    turnTimeoutMs: null,
    ...over,
  };
}

const reasons = (f: StuckFacts) => classifyStuck(f, NOW, LIMITS).map((x) => x.reason);

describe("stuck runs", () => {
  it("a healthy run is not stuck, and an ended run never is", () => {
    expect(reasons(facts())).toEqual([]);
    for (const status of ["succeeded", "failed", "cancelled"]) {
      expect(reasons(facts({ status, createdAt: ago(30 * 86_400_000), providerWaitSince: ago(1), executorLastSeenAt: null }))).toEqual([]);
    }
  });

  it("a run waiting on a provider outage (§2.8), as the controller leaves it: no executor, a wait since, a not-before", () => {
    const f = facts({ status: "suspended", providerWaitSince: ago(90_000), recoveryNotBefore: new Date(NOW.getTime() + 5_000), executorBootId: null, executorLastSeenAt: null });
    expect(classifyStuck(f, NOW, LIMITS)).toEqual([{ reason: "provider_wait", since: ago(90_000) }]);
  });

  it("a run in recovery back-off: attempts and the next attempt; past the not-before it is no longer held back", () => {
    const next = new Date(NOW.getTime() + 8_000);
    const f = facts({ status: "starting", recoveryAttempts: 3, recoveryNotBefore: next, executorBootId: null, executorLastSeenAt: null });
    expect(classifyStuck(f, NOW, LIMITS)).toEqual([{ reason: "recovery_backoff", attempts: 3, nextAttemptAt: next }]);
    expect(reasons({ ...f, recoveryNotBefore: NOW })).toEqual([]);
    // A not-before without a counted attempt is an outage's wait, not a back-off.
    expect(reasons({ ...f, recoveryAttempts: 0 })).toEqual([]);
  });

  it("a silent executor: the controller's own rule (isSilent), strictly past the window; a missing controller row is silent", () => {
    expect(reasons(facts({ executorLastSeenAt: ago(20_000) }))).toEqual([]);
    expect(reasons(facts({ executorLastSeenAt: ago(20_001) }))).toEqual(["executor_silent"]);
    expect(reasons(facts({ executorLastSeenAt: null }))).toEqual(["executor_silent"]);
    // No executor at all is a run waiting for a claim, and a queued run has none by definition.
    expect(reasons(facts({ executorBootId: null, executorLastSeenAt: null }))).toEqual([]);
    expect(reasons(facts({ status: "queued", phase: null, executorBootId: "boot-a", executorLastSeenAt: null }))).toEqual([]);
  });

  it("past the maximum age, queued runs included", () => {
    expect(reasons(facts({ status: "queued", phase: null, executorBootId: null, createdAt: ago(LIMITS.maxAgeMs + 1) }))).toEqual(["over_age"]);
    expect(reasons(facts({ createdAt: ago(LIMITS.maxAgeMs) }))).toEqual([]);
  });

  it("a turn past the maximum turn duration, or past its own larger budget plus the grace", () => {
    expect(classifyStuck(facts({ turnSince: ago(LIMITS.maxTurnMs + 1) }), NOW, LIMITS)).toEqual([{ reason: "turn_overdue", turn: 2, since: ago(LIMITS.maxTurnMs + 1), limitMs: LIMITS.maxTurnMs }]);
    expect(reasons(facts({ turnSince: ago(LIMITS.maxTurnMs) }))).toEqual([]);
    const budget = 2 * 3600_000;
    expect(turnLimitMs(budget, LIMITS)).toBe(budget + TURN_OVERDUE_GRACE_MS);
    expect(reasons(facts({ turnTimeoutMs: budget, turnSince: ago(budget) }))).toEqual([]);
    expect(reasons(facts({ turnTimeoutMs: budget, turnSince: ago(budget + TURN_OVERDUE_GRACE_MS + 1) }))).toEqual(["turn_overdue"]);
    // No turn in flight: every turn done, or no session open yet.
    expect(reasons(facts({ turnsDone: 3, turnSince: ago(LIMITS.maxTurnMs * 2) }))).toEqual([]);
    expect(reasons(facts({ phase: "bootstrapping", turnSince: ago(LIMITS.maxTurnMs * 2) }))).toEqual([]);
  });

  it("shows every reason at once, in one order", () => {
    const f = facts({
      createdAt: ago(LIMITS.maxAgeMs * 2),
      providerWaitSince: ago(60_000),
      recoveryAttempts: 2,
      recoveryNotBefore: new Date(NOW.getTime() + 1_000),
      executorLastSeenAt: ago(LIMITS.silenceWindowMs * 3),
      turnSince: ago(LIMITS.maxTurnMs * 2),
    });
    expect(reasons(f)).toEqual([...STUCK_REASONS]);
  });

  fcTest.prop([fc.integer({ min: 0, max: 10_000_000 }), fc.integer({ min: 500, max: 600_000 })])("the cutoff and the predicate are one rule", (sinceMs, windowMs) => {
    const last = ago(sinceMs);
    expect(isSilent(last, NOW, windowMs)).toBe(last < silenceCutoff(NOW, windowMs));
    expect(stuckCutoffs(NOW, { ...LIMITS, silenceWindowMs: windowMs }).silentBefore).toEqual(silenceCutoff(NOW, windowMs));
  });
});
