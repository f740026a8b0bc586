import { failureFields } from "./catalogue";
import { at, check } from "./checks";
import type { RecoveryAttemptEvidence } from "./schemas";
import type { RecoveryAttemptResult } from "./verdicts";

/** The back-off between two recovery attempts never grows past this (§2.8). */
export const RECOVERY_BACKOFF_CAP_MS = 300_000;

/** Back-off after the n-th failed attempt: base, 2·base, 4·base, … capped. */
export function recoveryBackoffMs(attempts: number, baseMs: number): number {
  // 2^30 already exceeds any cap with a base of 1 ms; no overflow to Infinity.
  const factor = 2 ** Math.min(Math.max(attempts - 1, 0), 30);
  return Math.min(baseMs * factor, RECOVERY_BACKOFF_CAP_MS);
}

/**
 * Recovery never loops (DOMAIN.md §2.8): a recovery attempt that threw is counted; while
 * attempts are left the run is tried again after a doubling back-off, after that it ends
 * with `native_recovery_attempts_exhausted` and Retry.
 */
export function judgeRecoveryAttempt(e: RecoveryAttemptEvidence): RecoveryAttemptResult {
  const left = e.attempts < e.maxAttempts;
  const checks = [check("attempts_left", left, `attempts below ${e.maxAttempts}`, e.attempts)];
  if (!left) {
    return {
      kind: "recovery_attempt",
      verdict: "give_up",
      code: "native_recovery_attempts_exhausted",
      reason: "attempts_exhausted",
      checks,
      ...failureFields("native_recovery_attempts_exhausted"),
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
    notBefore: new Date(at(e.now) + backoffMs).toISOString(),
    backoffMs,
  };
}
