import { failureFields } from "./catalogue";
import { check } from "./checks";
import type { RecoveryRouteEvidence } from "./schemas";
import type { Check, RecoveryRouteResult } from "./verdicts";

/** Runner lifecycles a restarted controller may reattach to (the session survives in them). */
export const REATTACHABLE_LIFECYCLES: readonly string[] = ["ready", "suspended", "backpressure"];

/**
 * How an interrupted run goes on (docs/rules.md §2.1, §2.2, §2.8 "The recovery route"): the routing step of
 * recovery as a pure function. The shell gathers the run's phase and lease, and — only when
 * the route answers `read_runner` — the runner's state on the sandbox, then routes again and
 * carries out the action:
 *   restart_acquire          nothing reached a runner: acquire again
 *   finish                   the run was finishing: finish it
 *   next_turn_sandbox        between two per-turn sandboxes: the checkpoint carries the session on
 *                            (also from a bound per-turn sandbox whose runner was stopped with
 *                            every turn it processed recorded: that sandbox is given back)
 *   read_runner              bootstrapping on a sandbox: read its runner before deciding
 *   restart_bootstrap_fresh  no runner was ever started on the sandbox: bootstrap again on it
 *   recover_bootstrap        §2.2 decides (bootstrap_restart proof)
 *   recover_session          §2.1 decides (lease_binding proof)
 *   refused                  a warm run past session.open holds no sandbox: it rests in
 *                            `native_continuation_requires_reconciliation` with Retry
 */
export function judgeRecoveryRoute(e: RecoveryRouteEvidence): RecoveryRouteResult {
  const checks: Check[] = [];
  const phase = e.phase ?? "acquiring";
  const go = (verdict: RecoveryRouteResult["verdict"], reason: string, recoveryMode: RecoveryRouteResult["recoveryMode"] = null): RecoveryRouteResult => ({
    kind: "recovery_route",
    verdict,
    code: null,
    reason,
    checks,
    ...failureFields(null),
    recoveryMode,
  });

  const reachedRunner = !(phase === "acquiring" || (phase === "bootstrapping" && !e.sandboxBound));
  checks.push(check("reached_a_runner", reachedRunner, "phase past acquiring with a bound sandbox", `${phase}, ${e.sandboxBound ? "sandbox bound" : "no sandbox"}`));
  if (!reachedRunner) return go("restart_acquire", "nothing_reached_a_runner", e.turnsDone === 0 ? "bootstrap_retry" : "exact_checkpoint_resume");

  const finishing = phase === "finishing" || phase === "done";
  checks.push(check("finishing", finishing, "finishing or done", phase));
  if (finishing) return go("finish", "was_finishing", "exact_checkpoint_resume");

  if (phase === "session_open") {
    checks.push(check("sandbox_bound", e.sandboxBound, true, e.sandboxBound));
    if (e.sandboxBound && e.sandboxMode === "per_turn") {
      // A per-turn sandbox whose runner was stopped on purpose (the give-back after its turn,
      // cut short by a kill) has nothing left to reattach to, and needs none: the checkpoint
      // carries the session on to a fresh sandbox. Its runner decides (read only when asked).
      const runner = e.runner ?? null;
      checks.push(check("runner_read", runner !== null, true, runner !== null));
      if (!runner) return go("read_runner", "runner_not_read");
      const given = turnSandboxGivenBack(runner, e.turnsDone);
      checks.push(check("turn_sandbox_given_back", given.ok, "own state, stopped, process gone, no turn in flight, every processed turn recorded", given.actual));
      if (given.ok) return go("next_turn_sandbox", "turn_sandbox_stopped", "exact_checkpoint_resume");
      return go("recover_session", "session_on_sandbox");
    }
    if (e.sandboxBound) return go("recover_session", "session_on_sandbox");
    const perTurn = e.sandboxMode === "per_turn";
    checks.push(check("between_per_turn_sandboxes", perTurn, "per_turn", e.sandboxMode));
    if (perTurn) return go("next_turn_sandbox", "between_turn_sandboxes", "exact_checkpoint_resume");
    return {
      kind: "recovery_route",
      verdict: "refused",
      code: "native_continuation_requires_reconciliation",
      reason: "session_without_sandbox",
      checks,
      ...failureFields("native_continuation_requires_reconciliation"),
      recoveryMode: null,
    };
  }

  // Bootstrapping on a bound sandbox: the run's own record can lag the sandbox by one step,
  // so the runner's durable state decides (read only when asked).
  const runner = e.runner ?? null;
  checks.push(check("runner_read", runner !== null, true, runner !== null));
  if (!runner) return go("read_runner", "runner_not_read");

  const neverStarted = runner.state === null && runner.process === "absent";
  checks.push(check("runner_never_started", neverStarted, "no state, no process", `${runner.state ? "state" : "no state"}, ${runner.process}`));
  if (neverStarted) return go("restart_bootstrap_fresh", "no_runner_started", "bootstrap_retry");

  const s = runner.state;
  const sessionOpened = s !== null && s.ownedByRun && s.lastConnectionProtocolVersion !== null && REATTACHABLE_LIFECYCLES.includes(s.lifecycle);
  checks.push(
    check(
      "runner_opened_session",
      sessionOpened,
      "own state, connected, reattachable lifecycle",
      s ? `${s.ownedByRun ? "own" : "not own"}, ${s.lastConnectionProtocolVersion === null ? "never connected" : "connected"}, ${s.lifecycle}` : "no state",
    ),
  );
  if (sessionOpened) return go("recover_session", "runner_opened_session");
  return go("recover_bootstrap", "bootstrap_unfinished");
}

/**
 * Whether a bound per-turn sandbox's runner was stopped with nothing left on it: this run's
 * own state, lifecycle `stopped`, the process gone, no turn cut short, and no turn processed
 * past the run's record (a processed turn the run has not recorded lives only on this
 * sandbox: it is reattached to, never run again elsewhere). Unknown fields never pass.
 */
function turnSandboxGivenBack(runner: NonNullable<RecoveryRouteEvidence["runner"]>, turnsDone: number): { ok: boolean; actual: string } {
  const s = runner.state;
  if (!s) return { ok: false, actual: `no state, ${runner.process}` };
  const inFlight = s.turnInFlight === undefined ? "in flight unknown" : s.turnInFlight === null ? "none in flight" : `turn ${s.turnInFlight} in flight`;
  const processed = s.lastProcessedSeq === undefined ? "processed unknown" : s.lastProcessedSeq === null ? "none processed" : `processed to ${s.lastProcessedSeq}`;
  const actual = `${s.ownedByRun ? "own" : "not own"}, ${s.lifecycle}, ${runner.process}, ${inFlight}, ${processed} (recorded ${turnsDone})`;
  const gone = runner.process === "absent" || runner.process === "stopped";
  const recorded = s.lastProcessedSeq === null || (s.lastProcessedSeq !== undefined && s.lastProcessedSeq <= turnsDone);
  return { ok: s.ownedByRun && s.lifecycle === "stopped" && gone && s.turnInFlight === null && recorded, actual };
}
