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
 * Whether a 429 is still the provider's own "wait" for this run (§2.8): the API's, or a
 * toolbox's that said how long (Retry-After), and the run has not yet waited on 429s past its
 * bound (`rateLimit`: so many waits, or so long since the first). Past it the 429 is judged like
 * any unavailability — it waits only while a probe finds the provider unavailable too — so one
 * call that answers 429 for ever loops no run. Bundles without `rateLimit` wait, as before.
 */
function rateLimitWait(e: RecoveryAttemptEvidence, checks: Check[]): boolean {
  const f = e.failure;
  if (f?.status !== 429) return false;
  if (f.scope === "toolbox" && f.retryAfterMs === null) return false;
  if (!e.rateLimit) return true;
  const { waits, since, maxWaits, maxWaitMs } = e.rateLimit;
  const waitedMs = since === null ? 0 : Math.max(0, at(e.now) - at(since));
  const within = waits < maxWaits && waitedMs < maxWaitMs;
  checks.push(check("rate_limit_waits_within_bound", within, `fewer than ${maxWaits} waits and under ${maxWaitMs} ms`, `${waits} waits over ${waitedMs} ms`));
  return within;
}

/**
 * Recovery never loops (docs/rules.md §2.8): a recovery attempt that threw is counted; while
 * attempts are left the run is tried again after a doubling back-off, after that it ends
 * with `native_recovery_attempts_exhausted` and Retry. An outage is not the run's failure:
 * an error that says the provider is unavailable, confirmed by a probe of the provider's API
 * after it (or a 429, the provider's own "wait", within its bound), is not counted — the run
 * waits for the provider. A sandbox's toolbox failing while the API answers is the run's own.
 */
export function judgeRecoveryAttempt(e: RecoveryAttemptEvidence): RecoveryAttemptResult {
  const checks: Check[] = [];
  const unavailableError = isProviderUnavailable(e.failure);
  // Asked only of a bundle that says what the error was (older bundles judge as before).
  if (e.failure) {
    const where = e.failure.scope ? ` (${e.failure.scope})` : "";
    const describe = `${e.failure.kind}${e.failure.status !== null ? ` ${e.failure.status}` : ""}${where}`;
    checks.push(check("error_is_provider_unavailability", unavailableError, "refused, reset, timeout, 5xx, 502 or 429", describe));
  }
  if (unavailableError) {
    // A 429 is the provider saying "wait" (within its bound); anything else waits only while
    // the provider's API stays unavailable after it (else it was this run's own trouble: a
    // sandbox's toolbox answering 502 while the API answers is counted).
    const rateLimited = rateLimitWait(e, checks);
    const unreachable = e.provider ? !e.provider.reachable : false;
    checks.push(
      check(
        "provider_unavailable_after_error",
        rateLimited || unreachable,
        "a 429 within its bound, or a probe after the error that found the provider unavailable",
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
