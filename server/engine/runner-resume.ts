import { failureFields } from "./catalogue";
import { check } from "./checks";
import { REATTACHABLE_LIFECYCLES } from "./recovery-route";
import type { RunnerResumeEvidence } from "./schemas";
import type { Check, RunnerResumeResult } from "./verdicts";

export type { RunnerResumeEvidence } from "./schemas";

/**
 * A dead runner on an admitted lease (`resume_dead_runner`, docs/rules.md §1's claim kinds;
 * §2.8, "A dead runner"): Daytona's auto-stop kills every process in a stopped sandbox, so a warm run's
 * runner is gone when recovery starts the sandbox again, while its durable state — session,
 * processed commands — is still on disk. Pure: reattach to a live runner; start the runner
 * again on its own state when that state is this run's, had connected, rests in a
 * reattachable lifecycle, no turn was in flight (a turn cut short may have half-happened: it
 * is never run again), and the process is proven gone; otherwise end the run with
 * `runner_not_resumable` and Retry.
 */
export function judgeRunnerResume(e: RunnerResumeEvidence): RunnerResumeResult {
  const checks: Check[] = [];
  const go = (verdict: "reattach" | "resume", reason: RunnerResumeResult["reason"]): RunnerResumeResult => ({
    kind: "runner_resume",
    verdict,
    code: null,
    reason,
    checks,
    ...failureFields(null),
  });
  const refuse = (reason: RunnerResumeResult["reason"]): RunnerResumeResult => ({
    kind: "runner_resume",
    verdict: "refused",
    code: "runner_not_resumable",
    reason,
    checks,
    ...failureFields("runner_not_resumable"),
  });

  const s = e.state;
  checks.push(check("runner_state_exists", s !== null, true, s !== null));
  if (!s) return refuse("no_runner_state");
  const own = s.runId === e.run.runId && s.runnerInstanceId === e.run.runnerInstanceId && s.sessionId === e.run.sessionId;
  checks.push(check("state_names_this_run", own, `${e.run.runId} / ${e.run.runnerInstanceId} / ${e.run.sessionId}`, `${s.runId} / ${s.runnerInstanceId} / ${s.sessionId}`));
  if (!own) return refuse("state_not_this_run");

  const running = e.process === "running";
  checks.push(check("runner_process_running", running, "running", e.process));
  if (running) return go("reattach", "runner_alive");

  const gone = e.process === "absent" || e.process === "stopped";
  checks.push(check("runner_process_gone", gone, "absent or stopped", e.process));
  if (!gone) return refuse("process_unknown");
  const connected = s.lastConnectionProtocolVersion !== null;
  checks.push(check("runner_connected", connected, "a protocol version", s.lastConnectionProtocolVersion === null ? null : String(s.lastConnectionProtocolVersion)));
  if (!connected) return refuse("never_connected");
  const lifecycle = REATTACHABLE_LIFECYCLES.includes(s.lifecycle);
  checks.push(check("lifecycle_resumable", lifecycle, REATTACHABLE_LIFECYCLES.join(" | "), s.lifecycle));
  if (!lifecycle) return refuse("lifecycle_not_resumable");
  checks.push(check("no_turn_in_flight", s.turnInFlight === null, null, s.turnInFlight));
  if (s.turnInFlight !== null) return refuse("turn_in_flight");
  return go("resume", "runner_dead_resumable");
}
