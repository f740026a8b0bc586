import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { startTestEmulator, type TestEmulator } from "../test/emulator";
import type { DaytonaProvider } from "../providers/daytona";
import { readRunnerState } from "../providers/runner";
import { buildLabels, creationName } from "../providers/types";
import { judgeStoppedSandbox } from "../engine";
import { readSandbox, startSandbox, type SandboxReading } from "./stopped-sandbox";

/** A lease's sandbox that auto-stopped while the controller was down is started again, or the run ends. */

let t: TestEmulator;
let provider: DaytonaProvider;

beforeAll(async () => {
  t = await startTestEmulator(inject("adminUrl"), inject("runPrefix"), {
    autoStopMinuteMs: 300,
    transitionMs: { create: 50, start: 50, stop: 50, destroy: 50 },
  });
  provider = t.provider({ instanceId: "inst-up" });
});

afterAll(async () => {
  await t?.close();
});

async function autoStopped(op: string) {
  const name = creationName("up", op);
  const sbx = await provider.create({ name, labels: buildLabels({ instanceId: "inst-up", companyId: "co-1", operationId: op }), autoStopInterval: 1 });
  await t.runner(provider).start(sbx.id, { runId: `r-${op}`, runnerInstanceId: "ri-1", sessionId: "s-1" });
  await expect.poll(async () => (await provider.getById(sbx.id))?.state, { timeout: 5000, interval: 50 }).toBe("stopped");
  return { id: sbx.id, name };
}

/** The sandbox readings the recovery walk takes, judged as it judges them (engine/recovery-walk.ts): a start only when the engine says so. */
async function bringSandboxUp(p: DaytonaProvider, sbx: { id: string }, budget: { startAttempts: number; maxStartAttempts: number }) {
  const judge = (r: SandboxReading) => ({ kind: "stopped_sandbox" as const, sandboxState: r.state, desiredState: r.desiredState, startAttempts: r.startAttempts, maxStartAttempts: budget.maxStartAttempts });
  const seen = judge(await readSandbox(p, sbx.id, budget.startAttempts));
  const first = judgeStoppedSandbox(seen);
  if (first.verdict !== "start_sandbox") return { attempted: false, restarted: false, error: null, decision: first, evidence: seen };
  const started = await startSandbox(p, sbx.id, budget.startAttempts);
  const after = judge(started);
  return { attempted: true, restarted: started.restarted, error: started.error, decision: judgeStoppedSandbox(after), evidence: after };
}

describe("the stopped-sandbox readings", () => {
  it("starts an auto-stopped sandbox again; the runner state is there to recover from", async () => {
    const sbx = await autoStopped("op-up");
    const out = await bringSandboxUp(provider, sbx, { startAttempts: 0, maxStartAttempts: 2 });
    expect(out).toMatchObject({ attempted: true, restarted: true, error: null, decision: { verdict: "proceed" }, evidence: { sandboxState: "started", startAttempts: 1 } });
    expect(await readRunnerState(provider, sbx.id)).toMatchObject({ runId: "r-op-up" });
    // Already up: nothing to do.
    expect(await bringSandboxUp(provider, sbx, { startAttempts: 1, maxStartAttempts: 2 })).toMatchObject({ attempted: false, decision: { verdict: "proceed" } });
  });

  it("ends the run with a catalogue code once the attempts are spent, without starting it", async () => {
    const sbx = await autoStopped("op-spent");
    const out = await bringSandboxUp(provider, sbx, { startAttempts: 2, maxStartAttempts: 2 });
    expect(out).toMatchObject({ attempted: false, decision: { verdict: "end_run", code: "sandbox_not_restartable" } });
    expect((await provider.getById(sbx.id))?.state).toBe("stopped");
  });

  it("ends the run when the sandbox is gone", async () => {
    const sbx = await autoStopped("op-gone");
    await provider.destroy(sbx.id);
    const out = await bringSandboxUp(provider, sbx, { startAttempts: 0, maxStartAttempts: 2 });
    // Looked up by id, a deleted sandbox is `destroying` for a moment, then `destroyed` or 404.
    expect(out).toMatchObject({ attempted: false, decision: { verdict: "end_run", code: "sandbox_not_restartable" } });
    expect([null, "destroying", "destroyed"]).toContain(out.evidence.sandboxState);
  });
});
