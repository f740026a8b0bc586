import { describe, expect, test } from "vitest";
import fc from "fast-check";
import { describeFailure } from "./catalogue";
import { decide } from "./decide";
import { restingCode } from "./resting-code";
import { judgeRunnerResume, type RunnerResumeEvidence } from "./runner-resume";
import { RUNNER_LIFECYCLES, RUNNER_PROCESS_STATES } from "./schemas";

const ids = { runId: "run-1", runnerInstanceId: "ri-1", sessionId: "s-1" };
const evidence = (over: Partial<RunnerResumeEvidence> = {}, state: Partial<NonNullable<RunnerResumeEvidence["state"]>> = {}): RunnerResumeEvidence => ({
  kind: "runner_resume",
  run: ids,
  state: { ...ids, lifecycle: "suspended", lastConnectionProtocolVersion: "1", turnInFlight: null, ...state },
  process: "absent",
  ...over,
});

describe("judgeRunnerResume (resume_dead_runner)", () => {
  test("a live runner: reattach, nothing started", () => {
    expect(judgeRunnerResume(evidence({ process: "running" }))).toMatchObject({ verdict: "reattach", reason: "runner_alive", code: null });
  });

  test.each(["absent", "stopped"] as const)("a runner process %s on its own connected, suspended state: resume it", (process) => {
    const d = judgeRunnerResume(evidence({ process }));
    expect(d).toMatchObject({ verdict: "resume", reason: "runner_dead_resumable", code: null });
    expect(d.checks.every((c) => c.name === "runner_process_running" || c.ok)).toBe(true);
  });

  test("a turn in flight when the runner died is never run again: the run ends with Retry", () => {
    const d = judgeRunnerResume(evidence({}, { turnInFlight: 3 }));
    expect(d).toMatchObject({ verdict: "refused", reason: "turn_in_flight", code: "runner_not_resumable" });
    expect(d.checks.find((c) => c.name === "no_turn_in_flight")).toMatchObject({ ok: false, actual: 3 });
    expect(describeFailure(d.code)).toMatchObject({ outcome: "terminal_failure", owner: "board", canRetry: true });
    expect(restingCode(d)).toBe("runner_not_resumable");
  });

  test.each([
    ["no state", evidence({ state: null }), "no_runner_state"],
    ["another session's state", evidence({}, { sessionId: "s-2" }), "state_not_this_run"],
    ["another runner instance's state", evidence({}, { runnerInstanceId: "ri-2" }), "state_not_this_run"],
    ["a process nobody can see", evidence({ process: "unknown" }), "process_unknown"],
    ["a runner that never connected", evidence({}, { lastConnectionProtocolVersion: null }), "never_connected"],
    ["a stopped runner", evidence({}, { lifecycle: "stopped" }), "lifecycle_not_resumable"],
    ["a revoked runner", evidence({}, { lifecycle: "revoked" }), "lifecycle_not_resumable"],
  ] as const)("refused: %s", (_what, e, reason) => {
    expect(judgeRunnerResume(e)).toMatchObject({ verdict: "refused", reason, code: "runner_not_resumable" });
  });

  test("decide() takes the bundle and gives the same verdict", () => {
    expect(decide(evidence())).toEqual(judgeRunnerResume(evidence()));
  });

  test("property: resume only when every resume check holds; reattach only on a running process", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...RUNNER_PROCESS_STATES),
        fc.constantFrom(...RUNNER_LIFECYCLES),
        fc.option(fc.integer({ min: 1, max: 9 }), { nil: null }),
        fc.boolean(),
        fc.boolean(),
        (process, lifecycle, turnInFlight, connected, own) => {
          const d = judgeRunnerResume(
            evidence({ process }, { lifecycle, turnInFlight, lastConnectionProtocolVersion: connected ? "1" : null, sessionId: own ? "s-1" : "s-other" }),
          );
          const resumable = own && (process === "absent" || process === "stopped") && connected && ["ready", "suspended", "backpressure"].includes(lifecycle) && turnInFlight === null;
          expect(d.verdict === "resume").toBe(resumable);
          expect(d.verdict === "reattach").toBe(own && process === "running");
          expect(d.verdict === "refused").toBe(d.code === "runner_not_resumable");
        },
      ),
    );
  });
});
