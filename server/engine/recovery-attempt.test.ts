import { describe, expect, it } from "vitest";
import { fc, test as fcTest } from "@fast-check/vitest";
import { decide } from "./decide";
import { judgeRecoveryAttempt, RECOVERY_BACKOFF_CAP_MS, recoveryBackoffMs } from "./recovery-attempt";
import { plus, recoveryAttempt, T0 } from "../test/evidence";
import { verdictSchema } from "./verdicts";

describe("recovery_attempt (DOMAIN.md §2.8: recovery never loops)", () => {
  it("tries again after the base back-off on the first failure", () => {
    const v = judgeRecoveryAttempt(recoveryAttempt({ attempts: 1, backoffBaseMs: 2_000 }));
    expect(v).toMatchObject({ verdict: "try_again", code: null, reason: "attempts_left", backoffMs: 2_000, notBefore: plus(T0, 2_000), canRetry: false });
    expect(verdictSchema.parse(v)).toEqual(v);
  });

  it("doubles the back-off each attempt and caps it at 300 s", () => {
    expect([1, 2, 3, 4].map((n) => recoveryBackoffMs(n, 2_000))).toEqual([2_000, 4_000, 8_000, 16_000]);
    expect(recoveryBackoffMs(9, 2_000)).toBe(300_000);
    expect(recoveryBackoffMs(5_000, 1)).toBe(RECOVERY_BACKOFF_CAP_MS);
    expect(judgeRecoveryAttempt(recoveryAttempt({ attempts: 20, maxAttempts: 50 })).notBefore).toBe(plus(T0, 300_000));
  });

  it("gives up when the attempts are spent: native_recovery_attempts_exhausted, owner board, Retry", () => {
    const v = judgeRecoveryAttempt(recoveryAttempt({ attempts: 5, maxAttempts: 5, lastError: "ECONNREFUSED" }));
    expect(v).toMatchObject({
      verdict: "give_up",
      code: "native_recovery_attempts_exhausted",
      reason: "attempts_exhausted",
      outcome: "terminal_failure",
      owner: "board",
      canRetry: true,
      notBefore: null,
    });
    expect(v.checks).toEqual([{ name: "attempts_left", ok: false, expected: "attempts below 5", actual: 5 }]);
  });

  it("a back-off of 0 tries again at once", () => {
    expect(judgeRecoveryAttempt(recoveryAttempt({ backoffBaseMs: 0 })).notBefore).toBe(T0);
  });

  it("is a kind of decide; errors default to none", () => {
    expect(decide({ kind: "recovery_attempt", now: T0, attempts: 2, maxAttempts: 2, backoffBaseMs: 10, lastError: "x" })).toMatchObject({ verdict: "give_up" });
  });

  fcTest.prop([fc.integer({ min: 1, max: 200 }), fc.integer({ min: 1, max: 200 }), fc.integer({ min: 0, max: 1_000_000 })])(
    "never tries again past maxAttempts, never waits more than the cap",
    (attempts, maxAttempts, backoffBaseMs) => {
      const v = judgeRecoveryAttempt(recoveryAttempt({ attempts, maxAttempts, backoffBaseMs }));
      expect(v.verdict).toBe(attempts < maxAttempts ? "try_again" : "give_up");
      if (v.backoffMs !== null) expect(v.backoffMs).toBeLessThanOrEqual(RECOVERY_BACKOFF_CAP_MS);
    },
  );
});
