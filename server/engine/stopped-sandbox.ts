import { failureFields } from "./catalogue";
import { check } from "./checks";
import type { StoppedSandboxEvidence } from "./schemas";
import type { StoppedSandboxResult } from "./verdicts";

export type { StoppedSandboxEvidence } from "./schemas";
export type StoppedSandboxDecision = StoppedSandboxResult;

/**
 * A run's sandbox that is not `started` during recovery (docs/rules.md §2.8, "A stopped sandbox"): Daytona's auto-stop
 * stops an idle sandbox, e.g. while the controller was down. Pure: start it again a bounded
 * number of times, wait out a transition, or end the run with a catalogue code — never a
 * loop that reclaims the run on every tick.
 */

/** States on the way to `started` or `stopped`: the provider is already acting; look again. */
const TRANSITIONAL = new Set(["creating", "starting", "stopping", "restoring", "pulling_snapshot", "pending_build", "building_snapshot", "resuming"]);
/** States Daytona's `POST /sandbox/{id}/start` takes a sandbox out of (sandbox.service.ts start(), v0.190.0). */
const STARTABLE = new Set(["stopped", "archived", "archiving"]);

export function judgeStoppedSandbox(e: StoppedSandboxEvidence): StoppedSandboxResult {
  const state = e.sandboxState;
  const go = (verdict: "proceed" | "wait" | "start_sandbox", reason: StoppedSandboxResult["reason"]): StoppedSandboxResult => ({
    kind: "stopped_sandbox",
    verdict,
    code: null,
    reason,
    checks,
    ...failureFields(null),
  });
  const end = (reason: StoppedSandboxResult["reason"]): StoppedSandboxResult => ({
    kind: "stopped_sandbox",
    verdict: "end_run",
    code: "sandbox_not_restartable",
    reason,
    checks,
    ...failureFields("sandbox_not_restartable"),
  });
  const checks = [check("sandbox_exists", state !== null, true, state !== null)];
  if (state === null) return end("sandbox_gone");
  checks.push(check("sandbox_started", state === "started", "started", state));
  if (state === "started") return go("proceed", "sandbox_started");
  // An archived sandbox whose start was asked keeps showing `archived` while it is restored.
  const restoring = (state === "archived" || state === "archiving") && e.desiredState === "started";
  if ((TRANSITIONAL.has(state) || restoring) && e.desiredState !== "destroyed") {
    checks.push(check("sandbox_in_transition", true, true, true));
    return go("wait", "sandbox_in_transition");
  }
  const startable = STARTABLE.has(state) && e.desiredState !== "destroyed";
  checks.push(check("sandbox_startable", startable, true, startable));
  if (!startable) return end("sandbox_not_startable");
  const budget = e.startAttempts < e.maxStartAttempts;
  checks.push(check("start_attempts_left", budget, e.maxStartAttempts, e.startAttempts));
  return budget ? go("start_sandbox", "sandbox_startable") : end("start_attempts_exhausted");
}
