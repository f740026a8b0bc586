import { describe, expect, test } from "vitest";
import { describeFailure } from "./catalogue";
import { judgeStoppedSandbox, type StoppedSandboxEvidence } from "./stopped-sandbox";

const evidence = (over: Partial<StoppedSandboxEvidence>): StoppedSandboxEvidence => ({
  kind: "stopped_sandbox",
  sandboxState: "stopped",
  desiredState: "stopped",
  startAttempts: 0,
  maxStartAttempts: 2,
  ...over,
});

describe("judgeStoppedSandbox (auto-stop while the controller was down)", () => {
  test("a started sandbox: recovery proceeds", () => {
    expect(judgeStoppedSandbox(evidence({ sandboxState: "started", desiredState: "started" })).verdict).toBe("proceed");
  });

  // Daytona's start() takes all three (sandbox.service.ts at v0.190.0), archiving included.
  test.each([
    ["stopped", "stopped"],
    ["archived", "archived"],
    ["archiving", "archived"],
  ])("a %s sandbox (desired %s) is started again while attempts are left", (state, desired) => {
    const d = judgeStoppedSandbox(evidence({ sandboxState: state, desiredState: desired }));
    expect(d).toMatchObject({ verdict: "start_sandbox", code: null });
    expect(d.checks.find((c) => c.name === "start_attempts_left")).toMatchObject({ ok: true, expected: 2, actual: 0 });
  });

  test("never a loop: once the attempts are spent the run ends with a catalogue code and Retry", () => {
    const d = judgeStoppedSandbox(evidence({ startAttempts: 2 }));
    expect(d).toMatchObject({ verdict: "end_run", code: "sandbox_not_restartable" });
    expect(describeFailure(d.code)).toMatchObject({ outcome: "terminal_failure", canRetry: true });
  });

  test.each(["creating", "starting", "stopping", "restoring"])("%s: the provider is already acting, look again", (state) => {
    expect(judgeStoppedSandbox(evidence({ sandboxState: state, desiredState: "started" })).verdict).toBe("wait");
  });

  test("an archived sandbox whose start was asked (Daytona shows archived, desired started, while it restores): look again, no second start", () => {
    expect(judgeStoppedSandbox(evidence({ sandboxState: "archived", desiredState: "started" })).verdict).toBe("wait");
  });

  test.each([
    [null, null],
    ["destroying", "destroyed"],
    ["destroyed", "destroyed"],
    ["error", "started"],
    ["build_failed", "started"],
  ])("state %s (desired %s): cannot be started, the run ends", (state, desired) => {
    expect(judgeStoppedSandbox(evidence({ sandboxState: state, desiredState: desired }))).toMatchObject({ verdict: "end_run", code: "sandbox_not_restartable" });
  });
});
