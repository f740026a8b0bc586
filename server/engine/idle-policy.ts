/**
 * The sandbox's own idle policy (docs/rules.md §4, "The sandbox idle policy"): what a run's sandbox is created with, Daytona's
 * `autoStopInterval` and `autoDeleteInterval` in minutes (daytonaio/daytona v0.190.0,
 * apps/api/src/sandbox/dto/create-sandbox.dto.ts; semantics in entities/sandbox.entity.ts:
 * auto-stop 0 = never, auto-delete -1 = never, 0 = delete at stop).
 *
 * Auto-stop counts only API and toolbox activity, so a turn nobody polls (its controller
 * died) is idle to the provider: an interval shorter than the turn kills live work
 * (fabro#766). It is therefore never below the turn's longest life — its budget, which the
 * runner enforces, plus the controller's deadline margin — rounded up to minutes plus a
 * margin. It is never 0 either: that disables auto-stop and a lost sandbox runs for ever
 * (hermes-agent#28804). Auto-delete removes a sandbox left stopped; it must leave a suspended
 * run's recovery time to find and start its sandbox again, so it is at least an hour.
 */

/** Minutes added to a turn's longest life before its sandbox may auto-stop. */
export const AUTO_STOP_MARGIN_MINUTES = 5;
/** The shortest auto-delete interval: recovery of a suspended run must still find its sandbox. */
export const MIN_AUTO_DELETE_MINUTES = 60;
/** Daytona's "never" for auto-delete. */
export const AUTO_DELETE_NEVER = -1;

export interface IdlePolicyInput {
  /** The run's turn budget: its `turn_timeout_ms` or the controller's RUNWARDEN_TURN_TIMEOUT_MS. */
  turnBudgetMs: number;
  /** How long past the budget the controller still waits for the runner's record. */
  turnDeadlineMarginMs: number;
  /** RUNWARDEN_SANDBOX_AUTO_STOP_MINUTES (null: derived from the turn). */
  autoStopMinutes: number | null;
  /** RUNWARDEN_SANDBOX_AUTO_DELETE_MINUTES (-1: never). */
  autoDeleteMinutes: number;
}

export interface IdlePolicy {
  autoStopMinutes: number;
  autoDeleteMinutes: number;
  /** The least auto-stop this run's turns allow; a smaller setting is raised to it. */
  autoStopFloorMinutes: number;
}

export function sandboxIdlePolicy(i: IdlePolicyInput): IdlePolicy {
  const turnMs = Math.max(0, i.turnBudgetMs) + Math.max(0, i.turnDeadlineMarginMs);
  const floor = Math.ceil(turnMs / 60_000) + AUTO_STOP_MARGIN_MINUTES;
  const autoStopMinutes = Math.max(floor, i.autoStopMinutes ?? 0);
  const autoDeleteMinutes = i.autoDeleteMinutes < 0 ? AUTO_DELETE_NEVER : Math.max(MIN_AUTO_DELETE_MINUTES, i.autoDeleteMinutes);
  return { autoStopMinutes, autoDeleteMinutes, autoStopFloorMinutes: floor };
}
