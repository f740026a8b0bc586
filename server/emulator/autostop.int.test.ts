import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { DaytonaProvider } from "../providers/daytona";
import { readRunnerState, type RunnerClient } from "../providers/runner";
import { buildLabels, creationName } from "../providers/types";
import { startTestEmulator, type TestEmulator } from "../test/emulator";
import { DEFAULT_API_KEY } from "./server";

/**
 * Daytona's auto-stop: `autoStopInterval` minutes without toolbox or lifecycle activity stop
 * a sandbox even while its processes run; a toolbox call in progress (a running turn) is
 * activity, a call that carries `X-Daytona-Skip-Last-Activity-Update: true` (every look the
 * provider and the runner client take) is not. Here one "minute" lasts MINUTE_MS. The
 * provider starts a stopped sandbox again.
 */

const MINUTE_MS = 400;
let t: TestEmulator;
let provider: DaytonaProvider;
let runner: RunnerClient;

beforeAll(async () => {
  t = await startTestEmulator(inject("adminUrl"), inject("runPrefix"), {
    autoStopMinuteMs: MINUTE_MS,
    transitionMs: { create: 50, start: 50, stop: 50, destroy: 50 },
  });
  provider = t.provider({ instanceId: "inst-as" });
  runner = t.runner(provider, 30_000);
});

afterAll(async () => {
  await t?.close();
});

async function sandbox(op: string, autoStopInterval: number) {
  return provider.create({
    name: creationName("as", op),
    labels: buildLabels({ instanceId: "inst-as", companyId: "co-1", operationId: op }),
    autoStopInterval,
  });
}

async function stateOf(id: string): Promise<string | undefined> {
  return (await provider.getById(id))?.state;
}

async function runnerAlive(id: string): Promise<boolean> {
  const row = (await t.admin.sandboxes()).find((s) => s.id === id);
  return row?.runnerProcess.state === "running";
}

describe("auto-stop", () => {
  it("stops an idle sandbox after autoStopInterval and kills its processes, a running runner included", async () => {
    const sbx = await sandbox("op-idle", 1);
    expect(sbx.state).toBe("creating");
    await runner.start(sbx.id, { runId: "r-idle", runnerInstanceId: "ri-1", sessionId: "s-1" });
    expect(await runnerAlive(sbx.id)).toBe(true);
    // GETs are not activity: polling the state does not keep it up.
    await expect.poll(() => stateOf(sbx.id), { timeout: 10 * MINUTE_MS, interval: 50 }).toBe("stopped");
    expect(await runnerAlive(sbx.id)).toBe(false);
    await expect(runner.process(sbx.id)).rejects.toMatchObject({ status: 400 });
  });

  it("keeps a sandbox up while a turn runs longer than the interval, then stops it when idle", async () => {
    const sbx = await sandbox("op-busy", 1);
    const turnMs = 4 * MINUTE_MS;
    await runner.start(sbx.id, {
      runId: "r-busy",
      runnerInstanceId: "ri-1",
      sessionId: "s-1",
      agentCommand: `sleep ${turnMs / 1000}; echo "turn $RUNWARDEN_TURN done"`,
    });
    const opened = await runner.sessionOpen(sbx.id, { timeoutMs: 5000 });
    expect(opened.ok).toBe(true);
    const began = Date.now();
    const turn = await runner.turn(sbx.id, 1);
    expect(Date.now() - began).toBeGreaterThanOrEqual(turnMs - 100);
    expect(turn.command).toMatchObject({ seq: 1, exitCode: 0, outputTail: expect.stringContaining("turn 1 done") });
    expect(await stateOf(sbx.id)).toBe("started");
    expect(await runnerAlive(sbx.id)).toBe(true);
    await expect.poll(() => stateOf(sbx.id), { timeout: 10 * MINUTE_MS, interval: 50 }).toBe("stopped");
  });

  it("a toolbox call with X-Daytona-Skip-Last-Activity-Update: true is not activity; the same call without it is (Daytona's proxy)", async () => {
    const sbx = await sandbox("op-skip", 0);
    await provider.ensureStarted(sbx.id);
    const lastActivity = async () => (await t.admin.sandboxes()).find((s) => s.id === sbx.id)!.lastActivityAt;
    const version = (headers: Record<string, string>) =>
      fetch(`${t.emulator.toolboxUrl}/${sbx.id}/version`, { headers: { authorization: `Bearer ${DEFAULT_API_KEY}`, ...headers } }).then((r) => r.status);
    const before = await lastActivity();
    // Only the exact value `true` skips (apps/proxy/pkg/proxy/get_sandbox_target.go).
    expect(await version({ "X-Daytona-Skip-Last-Activity-Update": "true" })).toBe(200);
    expect(await lastActivity()).toBe(before);
    expect(await version({})).toBe(200);
    const after = await lastActivity();
    expect(Date.parse(after)).toBeGreaterThan(Date.parse(before));
    expect(await version({ "X-Daytona-Skip-Last-Activity-Update": "yes" })).toBe(200);
    expect(Date.parse(await lastActivity())).toBeGreaterThan(Date.parse(after));
  });

  it("looks through the provider and the runner (the runner state, a file, a process peek), however often, do not keep an idle sandbox up", async () => {
    const sbx = await sandbox("op-looked-at", 1);
    const started = await runner.start(sbx.id, { runId: "r-looked-at", runnerInstanceId: "ri-1", sessionId: "s-1" });
    const pid = started.process!.pid;
    const look = async () => {
      await readRunnerState(provider, sbx.id).catch(() => null);
      await provider.readFile(sbx.id, "work/none.txt").catch(() => null);
      await runner.readState(sbx.id).catch(() => null);
      await runner.peekProcess(sbx.id, pid).catch(() => null);
      return stateOf(sbx.id);
    };
    // Looked at every 50 ms (a fraction of the 1-minute interval), it still stops on time.
    await expect.poll(look, { timeout: 10 * MINUTE_MS, interval: 50 }).toBe("stopped");
    expect(await runnerAlive(sbx.id)).toBe(false);
  });

  it("never stops a sandbox whose autoStopInterval is 0", async () => {
    const sbx = await sandbox("op-never", 0);
    await provider.ensureStarted(sbx.id);
    // A sleep on purpose: three emulated minutes give auto-stop the time to act (it must not).
    await new Promise((r) => setTimeout(r, 3 * MINUTE_MS));
    expect(await stateOf(sbx.id)).toBe("started");
  });

  it("ensureStarted starts a stopped sandbox again; its files survive, its runner process does not", async () => {
    const sbx = await sandbox("op-restart", 1);
    await runner.start(sbx.id, { runId: "r-restart", runnerInstanceId: "ri-1", sessionId: "s-1" });
    await expect.poll(() => stateOf(sbx.id), { timeout: 10 * MINUTE_MS, interval: 50 }).toBe("stopped");

    const again = await provider.ensureStarted(sbx.id);
    expect(again).toMatchObject({ outcome: "restarted", before: "stopped", sandbox: { state: "started" } });
    expect(await readRunnerState(provider, sbx.id)).toMatchObject({ runId: "r-restart", lifecycle: "connecting" });
    expect((await runner.process(sbx.id)).state).toBe("stopped");
    expect((await provider.ensureStarted(sbx.id)).outcome).toBe("already_started");

    // A sandbox that is gone cannot be started.
    await provider.destroy(sbx.id);
    await expect(provider.ensureStarted(sbx.id)).rejects.toThrow(/is destroying|does not exist/);
    await expect(provider.ensureStarted("00000000-0000-4000-8000-000000000000")).rejects.toMatchObject({ status: 404 });
  });
});
