import { assertNever } from "./checks";
import { EXECUTING_RUN_STATUSES, isLiveRunStatus } from "./run-status";
import { isSilent, silenceCutoff } from "./silence";

/**
 * Stuck runs (docs/rules.md §4, "Stuck runs"): a live run that is not moving, and why. A run may be stuck for
 * several reasons at once; each is read from the run's own row (and its executor's
 * heartbeat) against limits, on the database's clock (`now` is an argument).
 */
export const STUCK_REASONS = ["provider_wait", "recovery_backoff", "executor_silent", "over_age", "turn_overdue"] as const;
export type StuckReason = (typeof STUCK_REASONS)[number];

/**
 * A turn counts as overdue past the longer of the configured maximum and the run's own budget
 * plus this: the runner kills the agent at its budget and the controller waits 30 s more for the
 * record (TURN_DEADLINE_MARGIN_MS), so a turn alive after both is one nobody is ending.
 */
export const TURN_OVERDUE_GRACE_MS = 120_000;

export interface StuckLimits {
  /** The controllers' silence window (RUNWARDEN_EXECUTOR_TIMEOUT_MS). */
  silenceWindowMs: number;
  /** RUNWARDEN_STUCK_MAX_AGE_MS: a live run older than this is stuck. */
  maxAgeMs: number;
  /** RUNWARDEN_STUCK_MAX_TURN_MS: a turn running longer than this (or its own budget + grace) is stuck. */
  maxTurnMs: number;
}

/** What is read of a run (and its executor's heartbeat) to say whether it is stuck. */
export interface StuckFacts {
  status: string;
  phase: string | null;
  createdAt: Date;
  providerWaitSince: Date | null;
  recoveryAttempts: number;
  recoveryNotBefore: Date | null;
  executorBootId: string | null;
  /** The executor's last heartbeat; null when no controller row names it. */
  executorLastSeenAt: Date | null;
  turnsDone: number;
  turnsPlanned: number;
  /** When the turn in flight began: the last runner state, written at session.open and at each turn's end. */
  turnSince: Date | null;
  /** The run's own turn budget (null: the controller's). */
  turnTimeoutMs: number | null;
}

export type StuckFinding =
  | { reason: "provider_wait"; since: Date }
  | { reason: "recovery_backoff"; attempts: number; nextAttemptAt: Date }
  | { reason: "executor_silent"; executorBootId: string; lastSeenAt: Date | null }
  | { reason: "over_age"; since: Date; limitMs: number }
  | { reason: "turn_overdue"; turn: number; since: Date; limitMs: number };

/** The longest a turn of this run may run before it counts as overdue. */
export function turnLimitMs(turnTimeoutMs: number | null, limits: Pick<StuckLimits, "maxTurnMs">): number {
  return Math.max(limits.maxTurnMs, (turnTimeoutMs ?? 0) + TURN_OVERDUE_GRACE_MS);
}

/** The limits as times for SQL (the read model's index-friendly form of `classifyStuck`). */
export function stuckCutoffs(now: Date, limits: StuckLimits): { now: Date; silentBefore: Date; createdBefore: Date } {
  return { now, silentBefore: silenceCutoff(now, limits.silenceWindowMs), createdBefore: new Date(now.getTime() - limits.maxAgeMs) };
}

const executing = (status: string) => (EXECUTING_RUN_STATUSES as readonly string[]).includes(status);

/** Every reason this run is stuck at `now` (empty: it is not, or it already ended). */
export function classifyStuck(f: StuckFacts, now: Date, limits: StuckLimits): StuckFinding[] {
  if (!isLiveRunStatus(f.status)) return [];
  const out: StuckFinding[] = [];
  const t = now.getTime();
  for (const reason of STUCK_REASONS) {
    switch (reason) {
      case "provider_wait":
        // §2.8: an outage is not the run's failure; it waits, visibly.
        if (executing(f.status) && f.providerWaitSince) out.push({ reason, since: f.providerWaitSince });
        break;
      case "recovery_backoff":
        if (executing(f.status) && f.recoveryAttempts > 0 && f.recoveryNotBefore && f.recoveryNotBefore.getTime() > t) {
          out.push({ reason, attempts: f.recoveryAttempts, nextAttemptAt: f.recoveryNotBefore });
        }
        break;
      case "executor_silent":
        // A run with no executor waits for a claim (a back-off, an outage): that is not silence.
        if (executing(f.status) && f.executorBootId && (f.executorLastSeenAt === null || isSilent(f.executorLastSeenAt, now, limits.silenceWindowMs))) {
          out.push({ reason, executorBootId: f.executorBootId, lastSeenAt: f.executorLastSeenAt });
        }
        break;
      case "over_age":
        if (t - f.createdAt.getTime() > limits.maxAgeMs) out.push({ reason, since: f.createdAt, limitMs: limits.maxAgeMs });
        break;
      case "turn_overdue": {
        const limitMs = turnLimitMs(f.turnTimeoutMs, limits);
        if (f.status === "running" && f.phase === "session_open" && f.turnsDone < f.turnsPlanned && f.turnSince && t - f.turnSince.getTime() > limitMs) {
          out.push({ reason, turn: f.turnsDone + 1, since: f.turnSince, limitMs });
        }
        break;
      }
      default:
        assertNever(reason);
    }
  }
  return out;
}
