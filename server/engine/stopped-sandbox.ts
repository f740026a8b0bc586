import type { Check } from "./verdicts";
import { check } from "./checks";

/**
 * A run's sandbox that is not `started` during recovery (issue 11): Daytona's auto-stop
 * stops an idle sandbox, e.g. while the controller was down. Pure: start it again a bounded
 * number of times, wait out a transition, or end the run with a catalogue code — never a
 * loop that reclaims the run on every tick.
 */

export interface StoppedSandboxEvidence {
  /** The provider's state of the lease's sandbox; null when the provider says it does not exist. */
  sandboxState: string | null;
  desiredState: string | null;
  /** Start attempts already made for this lease (recorded as events or proofs by the caller). */
  startAttempts: number;
  maxStartAttempts: number;
}

export type StoppedSandboxDecision =
  | { verdict: "proceed"; code: null; checks: Check[] }
  | { verdict: "wait"; code: null; checks: Check[] }
  | { verdict: "start_sandbox"; code: null; checks: Check[] }
  | { verdict: "end_run"; code: "sandbox_not_restartable"; checks: Check[] };

/** States on the way to `started` or `stopped`: the provider is already acting; look again. */
const TRANSITIONAL = new Set(["creating", "starting", "stopping", "restoring", "pulling_snapshot", "pending_build", "building_snapshot", "resuming", "archiving"]);
/** States Daytona's `POST /sandbox/{id}/start` takes a sandbox out of. */
const STARTABLE = new Set(["stopped", "archived"]);

export function decideStoppedSandbox(e: StoppedSandboxEvidence): StoppedSandboxDecision {
  const state = e.sandboxState;
  const checks: Check[] = [check("sandbox_exists", state !== null, true, state !== null)];
  if (state === null) return { verdict: "end_run", code: "sandbox_not_restartable", checks };
  checks.push(check("sandbox_started", state === "started", "started", state));
  if (state === "started") return { verdict: "proceed", code: null, checks };
  if (TRANSITIONAL.has(state) && e.desiredState !== "destroyed") {
    checks.push(check("sandbox_in_transition", true, true, true));
    return { verdict: "wait", code: null, checks };
  }
  const startable = STARTABLE.has(state) && e.desiredState !== "destroyed";
  checks.push(check("sandbox_startable", startable, true, startable));
  const budget = e.startAttempts < e.maxStartAttempts;
  checks.push(check("start_attempts_left", budget, e.maxStartAttempts, e.startAttempts));
  if (startable && budget) return { verdict: "start_sandbox", code: null, checks };
  return { verdict: "end_run", code: "sandbox_not_restartable", checks };
}
