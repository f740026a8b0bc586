import { failureFields } from "./catalogue";
import { assertNever, at, check } from "./checks";
import type { RecoveryAttemptEvidence } from "./schemas";
import type { Check, RecoveryAttemptResult } from "./verdicts";

/** The back-off between two recovery attempts never grows past this (§2.8). */
export const RECOVERY_BACKOFF_CAP_MS = 300_000;

/** Back-off after the n-th failed attempt: base, 2·base, 4·base, … capped. */
export function recoveryBackoffMs(attempts: number, baseMs: number): number {
  // 2^30 already exceeds any cap with a base of 1 ms; no overflow to Infinity.
  const factor = 2 ** Math.min(Math.max(attempts - 1, 0), 30);
  return Math.min(baseMs * factor, RECOVERY_BACKOFF_CAP_MS);
}

/** HTTP statuses that say the provider as a whole is unavailable, not that the call was wrong (§2.8). */
const UNAVAILABLE_STATUSES: ReadonlySet<number> = new Set([429, 500, 502, 503, 504]);

type Failure = NonNullable<RecoveryAttemptEvidence["failure"]>;

/**
 * Whether a failure is the provider's unavailability rather than anything the run did
 * (§2.8): no answer at all (refused, reset, DNS), no answer in time, a 5xx, its proxy's 502,
 * or a 429. Everything else — a 4xx, an answer that does not fit the API, a refusal of ours,
 * a failure that was not a provider call — is the run's own.
 */
export function isProviderUnavailable(failure: Pick<Failure, "kind" | "status"> | undefined): boolean {
  if (!failure) return false;
  switch (failure.kind) {
    case "unreachable":
    case "timeout":
      return true;
    case "http":
    case "garbage":
      // A proxy's HTML error page is "garbage" with its status: the status says what it was.
      return failure.status !== null && (UNAVAILABLE_STATUSES.has(failure.status) || failure.status >= 500);
    case "aborted":
    case "refused":
    case "other":
      return false;
    default:
      return assertNever(failure.kind);
  }
}

/**
 * Recovery never loops (docs/rules.md §2.8): a recovery attempt that threw is counted; while
 * attempts are left the run is tried again after a doubling back-off, after that it ends
 * with `native_recovery_attempts_exhausted` and Retry. An outage is not the run's failure:
 * an error that says the provider is unavailable, confirmed by the breaker's probe after it
 * (or a 429, the provider's own "wait"), is not counted — the run waits for the provider.
 */
export function judgeRecoveryAttempt(e: RecoveryAttemptEvidence): RecoveryAttemptResult {
  const checks: Check[] = [];
  const unavailableError = isProviderUnavailable(e.failure);
  // Asked only of a bundle that says what the error was (older bundles judge as before).
  if (e.failure) {
    const describe = `${e.failure.kind}${e.failure.status !== null ? ` ${e.failure.status}` : ""}`;
    checks.push(check("error_is_provider_unavailability", unavailableError, "refused, reset, timeout, 5xx, 502 or 429", describe));
  }
  if (unavailableError) {
    // A 429 is the provider saying "wait" whatever a probe finds; anything else waits only
    // while the provider stays unreachable after it (else it was this run's own trouble).
    const rateLimited = e.failure?.status === 429;
    const unreachable = e.provider ? !e.provider.reachable : false;
    checks.push(
      check(
        "provider_unavailable_after_error",
        rateLimited || unreachable,
        "a 429, or a probe after the error that found the provider unavailable",
        rateLimited ? "rate limited" : e.provider ? (e.provider.reachable ? "probe answered" : `unavailable since ${e.provider.unavailableSince ?? "?"}`) : "no probe",
      ),
    );
    if (rateLimited || unreachable) {
      const providerWait = e.failure?.retryAfterMs ?? null;
      const probe = e.provider?.nextProbeAt ? at(e.provider.nextProbeAt) : null;
      const notBefore = Math.max(probe ?? at(e.now), providerWait === null ? at(e.now) : at(e.now) + providerWait);
      return {
        kind: "recovery_attempt",
        verdict: "wait",
        code: null,
        reason: "provider_unavailable",
        checks,
        ...failureFields(null),
        counted: false,
        notBefore: new Date(notBefore).toISOString(),
        backoffMs: notBefore - at(e.now),
      };
    }
  }
  const left = e.attempts < e.maxAttempts;
  checks.push(check("attempts_left", left, `attempts below ${e.maxAttempts}`, e.attempts));
  if (!left) {
    return {
      kind: "recovery_attempt",
      verdict: "give_up",
      code: "native_recovery_attempts_exhausted",
      reason: "attempts_exhausted",
      checks,
      ...failureFields("native_recovery_attempts_exhausted"),
      counted: true,
      notBefore: null,
      backoffMs: null,
    };
  }
  const backoffMs = recoveryBackoffMs(e.attempts, e.backoffBaseMs);
  return {
    kind: "recovery_attempt",
    verdict: "try_again",
    code: null,
    reason: "attempts_left",
    checks,
    ...failureFields(null),
    counted: true,
    notBefore: new Date(at(e.now) + backoffMs).toISOString(),
    backoffMs,
  };
}
