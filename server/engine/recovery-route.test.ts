import { describe, expect, it } from "vitest";
import { routeRecovery } from "./recovery-route";
import type { RecoveryRouteEvidence } from "./schemas";
import { recoveryRoute } from "../test/evidence";
import { verdictSchema } from "./verdicts";

type Runner = NonNullable<RecoveryRouteEvidence["runner"]>;
const connected: Runner = { state: { ownedByRun: true, lastConnectionProtocolVersion: 1, lifecycle: "ready" }, process: "running" };

describe("recovery_route (issue 12: recovery routing as a pure step)", () => {
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
    const v = routeRecovery(recoveryRoute(e));
    expect(v).toMatchObject({ kind: "recovery_route", verdict, code: null, canRetry: false });
    if (mode !== undefined) expect(v.recoveryMode).toBe(mode);
    expect(verdictSchema.parse(v)).toEqual(v);
  });

  it("a warm run past session.open without a sandbox is refused: it rests in native_continuation_requires_reconciliation with Retry", () => {
    const v = routeRecovery(recoveryRoute({ phase: "session_open", sandboxBound: false, sandboxMode: "warm" }));
    expect(v).toMatchObject({
      verdict: "refused",
      code: "native_continuation_requires_reconciliation",
      reason: "session_without_sandbox",
      owner: "board",
      canRetry: true,
    });
    expect(v.checks.filter((c) => !c.ok).map((c) => c.name)).toEqual(["reached_a_runner", "finishing", "sandbox_bound", "between_per_turn_sandboxes"].filter((n) => n !== "reached_a_runner"));
  });

  it("asks for the runner only when bootstrapping on a sandbox", () => {
    for (const phase of [null, "acquiring", "session_open", "finishing", "done"] as const) {
      for (const sandboxBound of [true, false]) {
        expect(routeRecovery(recoveryRoute({ phase, sandboxBound, runner: null })).verdict).not.toBe("read_runner");
      }
    }
  });
});
