import { describe, expect, it } from "vitest";
import { fc, test as fcTest } from "@fast-check/vitest";
import { decide } from "./decide";
import { isProviderUnavailable, judgeRecoveryAttempt, RECOVERY_BACKOFF_CAP_MS, recoveryBackoffMs } from "./recovery-attempt";
import { plus, recoveryAttempt, T0 } from "../test/evidence";
import { verdictSchema } from "./verdicts";

describe("recovery_attempt (docs/rules.md §2.8: recovery never loops)", () => {
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

describe("recovery_attempt: an outage is not the run's failure (docs/rules.md §2.8)", () => {
  const down = { reachable: false, unavailableSince: T0, lastError: "connect ECONNREFUSED", nextProbeAt: plus(T0, 4_000) };
  const up = { reachable: true, unavailableSince: null, lastError: null, nextProbeAt: null };

  it.each([
    ["refused", { kind: "unreachable", status: null }],
    ["timed out", { kind: "timeout", status: null }],
    ["a 503", { kind: "http", status: 503 }],
    ["a proxy's 502 page", { kind: "garbage", status: 502 }],
    ["a 500", { kind: "http", status: 500 }],
  ] as const)("%s, with the provider still unreachable after it: waits, not counted, even with no attempts left", (_, failure) => {
    const v = judgeRecoveryAttempt(recoveryAttempt({ attempts: 5, maxAttempts: 5, failure: { ...failure, code: null, retryAfterMs: null }, provider: down }));
    expect(v).toMatchObject({ verdict: "wait", reason: "provider_unavailable", counted: false, code: null, canRetry: false, notBefore: plus(T0, 4_000), backoffMs: 4_000 });
    expect(v.checks.map((c) => [c.name, c.ok])).toEqual([
      ["error_is_provider_unavailability", true],
      ["provider_unavailable_after_error", true],
    ]);
    expect(verdictSchema.parse(v)).toEqual(v);
  });

  it("a 429 waits whatever a probe finds, at least the provider's own Retry-After", () => {
    const v = judgeRecoveryAttempt(recoveryAttempt({ failure: { kind: "http", status: 429, code: null, retryAfterMs: 12_000 }, provider: up }));
    expect(v).toMatchObject({ verdict: "wait", counted: false, notBefore: plus(T0, 12_000) });
    // The later of the probe and the provider's wait.
    expect(judgeRecoveryAttempt(recoveryAttempt({ failure: { kind: "http", status: 429, code: null, retryAfterMs: 1_000 }, provider: down })).notBefore).toBe(plus(T0, 4_000));
  });

  it("an unavailability the probe does not confirm is the run's own: counted (a sandbox's own 502 loops no run for ever)", () => {
    const v = judgeRecoveryAttempt(recoveryAttempt({ attempts: 5, maxAttempts: 5, failure: { kind: "http", status: 502, code: null, retryAfterMs: null }, provider: up }));
    expect(v).toMatchObject({ verdict: "give_up", counted: true, code: "native_recovery_attempts_exhausted" });
    expect(v.checks.map((c) => [c.name, c.ok])).toEqual([
      ["error_is_provider_unavailability", true],
      ["provider_unavailable_after_error", false],
      ["attempts_left", false],
    ]);
    // No probe reading at all: nothing proves the outage, so it counts.
    expect(judgeRecoveryAttempt(recoveryAttempt({ failure: { kind: "unreachable", status: null, code: null, retryAfterMs: null } })).verdict).toBe("try_again");
  });

  it.each([
    ["a 404", { kind: "http", status: 404 }],
    ["a 400", { kind: "http", status: 400 }],
    ["garbage with a 200", { kind: "garbage", status: 200 }],
    ["garbage with no status", { kind: "garbage", status: null }],
    ["our own refusal", { kind: "refused", status: null }],
    ["an abort", { kind: "aborted", status: null }],
    ["not a provider call", { kind: "other", status: null }],
  ] as const)("%s is the run's own, even while the provider is down: counted", (_, failure) => {
    const v = judgeRecoveryAttempt(recoveryAttempt({ failure: { ...failure, code: null, retryAfterMs: null }, provider: down }));
    expect(v).toMatchObject({ verdict: "try_again", counted: true });
    expect(v.checks[0]).toMatchObject({ name: "error_is_provider_unavailability", ok: false });
  });

  fcTest.prop([
    fc.constantFrom("unreachable", "timeout", "aborted", "garbage", "http", "refused", "other"),
    fc.option(fc.integer({ min: 100, max: 599 })),
    fc.boolean(),
    fc.integer({ min: 1, max: 20 }),
  ])("waits only on a provider-unavailability error the provider confirms (or a 429), and a wait never counts", (kind, status, reachable, attempts) => {
    const failure = { kind, status, code: null, retryAfterMs: null };
    const v = judgeRecoveryAttempt(recoveryAttempt({ attempts, maxAttempts: 5, failure, provider: { ...down, reachable } }));
    const shouldWait = isProviderUnavailable(failure) && (status === 429 || !reachable);
    expect(v.verdict === "wait").toBe(shouldWait);
    expect(v.counted).toBe(!shouldWait);
    if (!shouldWait) expect(v.verdict).toBe(attempts < 5 ? "try_again" : "give_up");
  });
});

describe("recovery_attempt: one sandbox's trouble is the run's, a 429 waits within a bound (docs/rules.md §2.8)", () => {
  const up = { reachable: true, unavailableSince: null, lastError: null, nextProbeAt: null };
  const down = { reachable: false, unavailableSince: T0, lastError: "GET /sandbox/rw-breaker-probe: HTTP 502", nextProbeAt: plus(T0, 4_000) };
  const toolbox = (status: number, retryAfterMs: number | null = null) => ({ kind: "http" as const, status, code: null, retryAfterMs, scope: "toolbox" as const });
  const bound = { maxWaits: 3, maxWaitMs: 600_000 };

  it("a sandbox's toolbox answering 502 while the API answers is counted (try_again, then give_up)", () => {
    expect(judgeRecoveryAttempt(recoveryAttempt({ failure: toolbox(502), provider: up }))).toMatchObject({ verdict: "try_again", counted: true });
    const last = judgeRecoveryAttempt(recoveryAttempt({ attempts: 5, maxAttempts: 5, failure: toolbox(502), provider: up }));
    expect(last).toMatchObject({ verdict: "give_up", code: "native_recovery_attempts_exhausted" });
    expect(last.checks[0]).toMatchObject({ name: "error_is_provider_unavailability", ok: true, actual: "http 502 (toolbox)" });
  });

  it("a toolbox's failure while a probe finds the API down too is the outage: waits", () => {
    expect(judgeRecoveryAttempt(recoveryAttempt({ failure: { kind: "timeout", status: null, code: null, retryAfterMs: null, scope: "toolbox" }, provider: down }))).toMatchObject({ verdict: "wait", counted: false });
  });

  it("a toolbox's 429 waits only when it said how long (Retry-After); without, only a probe that finds the API down makes it wait", () => {
    expect(judgeRecoveryAttempt(recoveryAttempt({ failure: toolbox(429, 5_000), provider: up }))).toMatchObject({ verdict: "wait", notBefore: plus(T0, 5_000) });
    expect(judgeRecoveryAttempt(recoveryAttempt({ failure: toolbox(429), provider: up }))).toMatchObject({ verdict: "try_again", counted: true });
    // The API's own 429 is the provider's "wait", as before.
    expect(judgeRecoveryAttempt(recoveryAttempt({ failure: { kind: "http", status: 429, code: null, retryAfterMs: null, scope: "api" }, provider: up })).verdict).toBe("wait");
  });

  it("a 429 that never ends is counted past the bound: so many waits, or so long since the first", () => {
    const f = toolbox(429, 1_000);
    const within = judgeRecoveryAttempt(recoveryAttempt({ failure: f, provider: up, rateLimit: { waits: 2, since: plus(T0, -60_000), ...bound } }));
    expect(within).toMatchObject({ verdict: "wait", counted: false });
    expect(within.checks.find((c) => c.name === "rate_limit_waits_within_bound")).toMatchObject({ ok: true });
    const tooMany = judgeRecoveryAttempt(recoveryAttempt({ failure: f, provider: up, rateLimit: { waits: 3, since: plus(T0, -60_000), ...bound } }));
    expect(tooMany).toMatchObject({ verdict: "try_again", counted: true });
    expect(tooMany.checks.map((c) => [c.name, c.ok])).toEqual([
      ["error_is_provider_unavailability", true],
      ["rate_limit_waits_within_bound", false],
      ["provider_unavailable_after_error", false],
      ["attempts_left", true],
    ]);
    const tooLong = judgeRecoveryAttempt(recoveryAttempt({ failure: f, provider: up, rateLimit: { waits: 0, since: plus(T0, -600_000), ...bound } }));
    expect(tooLong).toMatchObject({ verdict: "try_again", counted: true });
    // The API's 429 past the bound too; but while a probe finds the provider down it is the outage, and waits.
    const api = { kind: "http" as const, status: 429, code: null, retryAfterMs: 1_000, scope: "api" as const };
    expect(judgeRecoveryAttempt(recoveryAttempt({ failure: api, provider: up, rateLimit: { waits: 3, since: T0, ...bound } })).verdict).toBe("try_again");
    expect(judgeRecoveryAttempt(recoveryAttempt({ failure: api, provider: down, rateLimit: { waits: 30, since: plus(T0, -3_600_000), ...bound } })).verdict).toBe("wait");
  });

  it("older bundles (no scope, no rate-limit history) are judged as before: a 429 waits", () => {
    expect(judgeRecoveryAttempt(recoveryAttempt({ failure: { kind: "http", status: 429, code: null, retryAfterMs: null }, provider: up })).verdict).toBe("wait");
  });

  fcTest.prop([fc.integer({ min: 0, max: 50 }), fc.integer({ min: 0, max: 3_600_000 }), fc.constantFrom("api", "toolbox"), fc.integer({ min: 1, max: 20 })])(
    "a 429 while the API answers waits at most maxWaits times and under maxWaitMs: never an unbounded loop",
    (waits, waitedMs, scope, attempts) => {
      const v = judgeRecoveryAttempt(
        recoveryAttempt({ attempts, maxAttempts: 5, failure: { kind: "http", status: 429, code: null, retryAfterMs: 1_000, scope }, provider: up, rateLimit: { waits, since: plus(T0, -waitedMs), ...bound } }),
      );
      expect(v.verdict === "wait").toBe(waits < bound.maxWaits && waitedMs < bound.maxWaitMs);
    },
  );
});
