import { failureFields } from "./catalogue";
import { check } from "./checks";
import type { RecoveryRouteEvidence } from "./schemas";
import type { Check, RecoveryRouteResult } from "./verdicts";

/** Runner lifecycles a restarted controller may reattach to (the session survives in them). */
export const REATTACHABLE_LIFECYCLES: readonly string[] = ["ready", "suspended", "backpressure"];

/**
 * How an interrupted run goes on (DOMAIN.md §2.1, §2.2, issue 12): the routing step of
 * recovery as a pure function. The shell gathers the run's phase and lease, and — only when
 * the route answers `read_runner` — the runner's state on the sandbox, then routes again and
 * carries out the action:
 *   restart_acquire          nothing reached a runner: acquire again
 *   finish                   the run was finishing: finish it
 *   next_turn_sandbox        between two per-turn sandboxes: the checkpoint carries the session on
 *   read_runner              bootstrapping on a sandbox: read its runner before deciding
 *   restart_bootstrap_fresh  no runner was ever started on the sandbox: bootstrap again on it
 *   recover_bootstrap        §2.2 decides (bootstrap_restart proof)
 *   recover_session          §2.1 decides (lease_binding proof)
 *   refused                  a warm run past session.open holds no sandbox: it rests in
 *                            `native_continuation_requires_reconciliation` with Retry
 */
export function routeRecovery(e: RecoveryRouteEvidence): RecoveryRouteResult {
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
