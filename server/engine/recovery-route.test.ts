import { describe, expect, it } from "vitest";
import { judgeRecoveryRoute } from "./recovery-route";
import { recoveryRouteEvidenceSchema, type RecoveryRouteEvidence } from "./schemas";
import { recoveryRoute } from "../test/evidence";
import { verdictSchema } from "./verdicts";

type Runner = NonNullable<RecoveryRouteEvidence["runner"]>;
const connected: Runner = { state: { ownedByRun: true, lastConnectionProtocolVersion: 1, lifecycle: "ready" }, process: "running" };

describe("recovery_route (recovery routing as a pure step)", () => {
  it.each<{ name: string; e: Partial<RecoveryRouteEvidence>; verdict: string; mode?: string | null }>([
    { name: "never started", e: { phase: null, turnsDone: 0, sandboxBound: false }, verdict: "restart_acquire", mode: "bootstrap_retry" },
    { name: "acquiring with a checkpoint", e: { phase: "acquiring", turnsDone: 2 }, verdict: "restart_acquire", mode: "exact_checkpoint_resume" },
    { name: "bootstrapping without a sandbox", e: { phase: "bootstrapping", sandboxBound: false, turnsDone: 0 }, verdict: "restart_acquire", mode: "bootstrap_retry" },
    { name: "finishing", e: { phase: "finishing" }, verdict: "finish", mode: "exact_checkpoint_resume" },
    { name: "done", e: { phase: "done", sandboxBound: false }, verdict: "finish" },
    { name: "session open on a sandbox", e: { phase: "session_open", sandboxBound: true }, verdict: "recover_session", mode: null },
    { name: "per-turn between sandboxes", e: { phase: "session_open", sandboxBound: false, sandboxMode: "per_turn" }, verdict: "next_turn_sandbox", mode: "exact_checkpoint_resume" },
    { name: "bootstrapping on a sandbox, runner not read", e: { phase: "bootstrapping", runner: null }, verdict: "read_runner", mode: null },
    { name: "no runner ever started", e: { phase: "bootstrapping", runner: { state: null, process: "absent" } }, verdict: "restart_bootstrap_fresh", mode: "bootstrap_retry" },
    { name: "runner opened its session", e: { phase: "bootstrapping", runner: connected }, verdict: "recover_session" },
    {
      name: "runner never connected",
      e: { phase: "bootstrapping", runner: { state: { ownedByRun: true, lastConnectionProtocolVersion: null, lifecycle: "connecting" }, process: "stopped" } },
      verdict: "recover_bootstrap",
    },
    { name: "another run's state", e: { phase: "bootstrapping", runner: { ...connected, state: { ...connected.state!, ownedByRun: false } } }, verdict: "recover_bootstrap" },
    { name: "no state but a process of unknown state", e: { phase: "bootstrapping", runner: { state: null, process: "unknown" } }, verdict: "recover_bootstrap" },
    { name: "unrecoverable lifecycle", e: { phase: "bootstrapping", runner: { ...connected, state: { ...connected.state!, lifecycle: "unrecoverable" } } }, verdict: "recover_bootstrap" },
  ])("$name → $verdict", ({ e, verdict, mode }) => {
    const v = judgeRecoveryRoute(recoveryRoute(e));
    expect(v).toMatchObject({ kind: "recovery_route", verdict, code: null, canRetry: false });
    if (mode !== undefined) expect(v.recoveryMode).toBe(mode);
    expect(verdictSchema.parse(v)).toEqual(v);
  });

  it("a warm run past session.open without a sandbox is refused: it rests in native_continuation_requires_reconciliation with Retry", () => {
    const v = judgeRecoveryRoute(recoveryRoute({ phase: "session_open", sandboxBound: false, sandboxMode: "warm" }));
    expect(v).toMatchObject({
      verdict: "refused",
      code: "native_continuation_requires_reconciliation",
      reason: "session_without_sandbox",
      owner: "board",
      canRetry: true,
    });
    expect(v.checks.filter((c) => !c.ok).map((c) => c.name)).toEqual(["reached_a_runner", "finishing", "sandbox_bound", "between_per_turn_sandboxes"].filter((n) => n !== "reached_a_runner"));
  });

  it("asks for the runner only when bootstrapping on a sandbox, or past session.open on a per-turn one", () => {
    for (const sandboxMode of ["warm", "per_turn"] as const) {
      for (const phase of [null, "acquiring", "session_open", "finishing", "done"] as const) {
        for (const sandboxBound of [true, false]) {
          const asks = sandboxMode === "per_turn" && phase === "session_open" && sandboxBound;
          expect(judgeRecoveryRoute(recoveryRoute({ sandboxMode, phase, sandboxBound, runner: null })).verdict === "read_runner").toBe(asks);
        }
      }
    }
  });
});

describe("recovery_route: a per-turn sandbox whose runner was stopped on purpose", () => {
  // Killed between the give-back's runner.stop and the lease's release: turn 2 recorded, its runner stopped.
  const stopped: Runner = { state: { ownedByRun: true, lastConnectionProtocolVersion: 1, lifecycle: "stopped", turnInFlight: null, lastProcessedSeq: 2 }, process: "absent" };
  const perTurn = (runner: Runner, over: Partial<RecoveryRouteEvidence> = {}) => recoveryRoute({ phase: "session_open", sandboxMode: "per_turn", sandboxBound: true, turnsDone: 2, runner, ...over });
  const withState = (over: Partial<NonNullable<Runner["state"]>>, process: Runner["process"] = "absent"): Runner => ({ state: { ...stopped.state!, ...over }, process });

  it("is given back: the next turn gets a fresh sandbox (next_turn_sandbox), not a runner that cannot be resumed", () => {
    const v = judgeRecoveryRoute(perTurn(stopped));
    expect(v).toMatchObject({ verdict: "next_turn_sandbox", reason: "turn_sandbox_stopped", recoveryMode: "exact_checkpoint_resume", code: null });
    expect(v.checks.at(-1)).toMatchObject({ name: "turn_sandbox_given_back", ok: true });
    expect(verdictSchema.parse(v)).toEqual(v);
  });

  it.each<{ name: string; runner: Runner; turnsDone?: number; verdict: string }>([
    { name: "a process that is stopped (not gone from the table) counts as gone", runner: withState({}, "stopped"), verdict: "next_turn_sandbox" },
    { name: "the next turn's fresh sandbox, stopped before its turn ran", runner: withState({ lastProcessedSeq: null }), verdict: "next_turn_sandbox" },
    { name: "a turn processed past the run's record lives only there", runner: withState({ lastProcessedSeq: 3 }), verdict: "recover_session" },
    { name: "a turn cut short by the stop", runner: withState({ turnInFlight: 3 }), verdict: "recover_session" },
    { name: "turn in flight not known (an older reading)", runner: withState({ turnInFlight: undefined }), verdict: "recover_session" },
    { name: "processed turns not known", runner: withState({ lastProcessedSeq: undefined }), verdict: "recover_session" },
    { name: "a runner still running", runner: withState({}, "running"), verdict: "recover_session" },
    { name: "a process of unknown state", runner: withState({}, "unknown"), verdict: "recover_session" },
    { name: "a live lifecycle (reattached to)", runner: withState({ lifecycle: "ready" }), verdict: "recover_session" },
    { name: "a suspended runner (drained: reattached to)", runner: withState({ lifecycle: "suspended" }), verdict: "recover_session" },
    { name: "another run's state", runner: withState({ ownedByRun: false }), verdict: "recover_session" },
    { name: "no runner state", runner: { state: null, process: "absent" }, verdict: "recover_session" },
  ])("$name → $verdict", ({ runner, turnsDone, verdict }) => {
    const v = judgeRecoveryRoute(perTurn(runner, turnsDone === undefined ? {} : { turnsDone }));
    expect(v.verdict).toBe(verdict);
    expect(v.checks.at(-1)).toMatchObject({ name: "turn_sandbox_given_back", ok: verdict === "next_turn_sandbox" });
  });

  it("a warm run's stopped runner is never given back: §2.1 and runner_resume decide", () => {
    expect(judgeRecoveryRoute(perTurn(stopped, { sandboxMode: "warm" })).verdict).toBe("recover_session");
  });

  it("evidence recorded before the new fields parses, and reads as not given back", () => {
    const old = recoveryRouteEvidenceSchema.parse({ ...perTurn(stopped), runner: { state: { ownedByRun: true, lastConnectionProtocolVersion: 1, lifecycle: "stopped" }, process: "absent" } });
    expect(judgeRecoveryRoute(old).verdict).toBe("recover_session");
  });
});
