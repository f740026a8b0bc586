import { recoveryBackoffMs } from "../engine";

/**
 * An outage test's thresholds, compressed by configuration (docs/rules.md §2.8, the outage
 * rule): the outage must outlast every threshold a run could cross while it lasts, and what
 * makes the test worth running is only that it crosses them — not how long it lasts at the
 * defaults. The numbers here are the ones the test hands its controllers (`outageEnv`), so the
 * outage it computes from them moves with them.
 */
export interface OutageSettings {
  /** DAYTONA_TIMEOUT_MS: a hung call fails after this long. */
  callTimeoutMs: number;
  /** RUNWARDEN_RECOVERY_MAX_ATTEMPTS. */
  maxAttempts: number;
  /** RUNWARDEN_RECOVERY_BACKOFF_MS, doubling per attempt. */
  backoffMs: number;
  /** RUNWARDEN_BREAKER_PROBE_MS, doubling up to RUNWARDEN_BREAKER_PROBE_CAP_MS. */
  probeMs: number;
  probeCapMs: number;
}

export function outageEnv(s: OutageSettings): Record<string, string> {
  return {
    DAYTONA_TIMEOUT_MS: String(s.callTimeoutMs),
    RUNWARDEN_RECOVERY_MAX_ATTEMPTS: String(s.maxAttempts),
    RUNWARDEN_RECOVERY_BACKOFF_MS: String(s.backoffMs),
    RUNWARDEN_BREAKER_PROBE_MS: String(s.probeMs),
    RUNWARDEN_BREAKER_PROBE_CAP_MS: String(s.probeCapMs),
  };
}

/**
 * The recovery budget: how long recovery goes on, when every call fails after `callMs` and
 * nothing waits, before the run ends `native_recovery_attempts_exhausted` — each attempt's
 * call, and the back-off after each attempt but the last (engine/recovery-attempt.ts).
 */
export function recoveryBudgetMs(s: OutageSettings, callMs: number): number {
  let total = s.maxAttempts * callMs;
  for (let attempt = 1; attempt < s.maxAttempts; attempt++) total += recoveryBackoffMs(attempt, s.backoffMs);
  return total;
}

/** Until the breaker probes at its cap: the doubling delays below the cap, then one cap (providers/breaker.ts). */
export function probeCapReachedMs(s: OutageSettings): number {
  let total = 0;
  let delay = s.probeMs;
  while (delay < s.probeCapMs) {
    total += delay;
    delay *= 2;
  }
  return total + s.probeCapMs;
}

/** An outage crosses each threshold this many times over (a few: a busy machine's slowness is not mistaken for crossing one). */
export const CROSSINGS = 3;

/** The outage: CROSSINGS times the largest of `thresholds` (named, in ms, so a reader sees what it crosses). */
export function outageLength(thresholds: Record<string, number>): number {
  return Math.ceil(CROSSINGS * Math.max(...Object.values(thresholds)));
}
