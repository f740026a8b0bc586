import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { DaytonaProvider } from "../providers/daytona";
import { bootstrapRestartPath, DEMO_MARKER_FILE, PROVIDER_STATE_PATH, WORK_DIR, readRunnerState, RUNNER_STATE_PATH, TurnDeadlineError, type RunnerClient } from "../providers/runner";
import { buildLabels, creationName } from "../providers/types";
import { startTestEmulator, type TestEmulator } from "../test/emulator";
import { isProcessRunning } from "../test/process";

/** The real runner program (runnerd) in emulated sandboxes, through the toolbox-only RunnerClient. */

let t: TestEmulator;
let provider: DaytonaProvider;
let runner: RunnerClient;
/** Every request the emulator served ("METHOD /path?query"). */
const requests: string[] = [];

beforeAll(async () => {
  t = await startTestEmulator(inject("adminUrl"), inject("runPrefix"), { onRequest: (method, p) => requests.push(`${method} ${p}`) });
  provider = t.provider({ instanceId: "inst-a" });
  runner = t.runner(provider);
});

afterAll(async () => {
  await t?.close();
});

async function sandbox(op: string) {
  return provider.create({ name: creationName("rw", op), labels: buildLabels({ instanceId: "inst-a", companyId: "co-1", operationId: op }) });
}

describe("emulated runner", () => {
  it("walks connecting → ready → turns → suspended → reattached → stopped", async () => {
    const sbx = await sandbox("op-life");
    expect(await runner.process(sbx.id)).toEqual({ state: "absent" });

    const started = await runner.start(sbx.id, { runId: "r1", runnerInstanceId: "ri-1", sessionId: "s-1" });
    expect(started).toMatchObject({
      runId: "r1",
      runnerInstanceId: "ri-1",
      sessionId: "s-1",
      lifecycle: "connecting",
      lastConnectionProtocolVersion: null,
      lastControllerCommandSeq: 0,
      reconnectCount: 0,
      outbox: [],
      processedCommands: [],
      pendingTerminalDelivery: null,
      providerStatePresent: false,
    });
    const proc = await runner.process(sbx.id);
    expect(proc.state).toBe("running");
    expect(started.process).toEqual({ pid: proc.pid, startedAt: proc.startedAt, startTicks: proc.startTicks });

    // Turns need a session first.
    await expect(runner.turn(sbx.id, 1)).rejects.toMatchObject({ status: 409, code: "runner_not_ready" });

    const opened = await runner.sessionOpen(sbx.id, { timeoutMs: 5000 });
    if (!opened.ok) throw new Error(`session.open failed: ${opened.message}`);
    expect(opened.state).toMatchObject({ lifecycle: "ready", lastConnectionProtocolVersion: 1, reconnectCount: 0, providerStatePresent: true });
    expect(await provider.readFile(sbx.id, PROVIDER_STATE_PATH)).toContain("s-1");

    await runner.turn(sbx.id, 1, { prompt: "first" });
    const twice = (await runner.turn(sbx.id, 2)).state;
    expect((await runner.turn(sbx.id, 2)).state).toEqual(twice);
    expect(twice.lastControllerCommandSeq).toBe(2);
    expect(twice.processedCommands.map((c) => (c as { seq: number }).seq)).toEqual([1, 2]);
    await expect(runner.turn(sbx.id, 1)).resolves.toMatchObject({ state: { lastControllerCommandSeq: 2 }, command: { seq: 1, exitCode: 0 } });
    // The demo agent really ran, once per turn, in the work dir under the sandbox's home.
    const marker = (await provider.readFile(sbx.id, `${WORK_DIR}/${DEMO_MARKER_FILE}`)) ?? "";
    expect(marker.trim().split("\n").map((l) => (JSON.parse(l) as { turn: number }).turn)).toEqual([1, 2]);

    expect((await runner.suspend(sbx.id)).lifecycle).toBe("suspended");
    expect((await runner.process(sbx.id)).state).toBe("running");
    const reattached = await runner.reattach(sbx.id);
    expect(reattached).toMatchObject({ lifecycle: "ready", reconnectCount: 1, lastControllerCommandSeq: 2 });

    const stopped = await runner.stop(sbx.id);
    expect(stopped?.lifecycle).toBe("stopped");
    expect(await runner.process(sbx.id)).toEqual({ ...proc, state: "stopped" });
    await expect(runner.turn(sbx.id, 3)).rejects.toMatchObject({ code: "runner_not_running" });

    // The same state, read as the controller will: through the provider's file read.
    expect(await readRunnerState(provider, sbx.id)).toEqual(await runner.readState(sbx.id));
  });

  it("restarts a never-connected bootstrap with a new runner instance, keeping the old state aside", async () => {
    const sbx = await sandbox("op-bootstrap");
    const first = await runner.start(sbx.id, { runId: "r2", runnerInstanceId: "ri-old", sessionId: "s-2" });

    // A second runner cannot bind while the first still runs.
    await expect(runner.start(sbx.id, { runId: "r2", runnerInstanceId: "ri-new", sessionId: "s-2" })).rejects.toMatchObject({
      code: "runner_ingress_bind_conflict",
    });
    // The same runner asked again is the same runner.
    expect(await runner.start(sbx.id, { runId: "r2", runnerInstanceId: "ri-old", sessionId: "s-2" })).toEqual(first);

    await runner.stop(sbx.id);
    const restarted = await runner.start(sbx.id, { runId: "r2", runnerInstanceId: "ri-new", sessionId: "s-2" });
    expect(restarted).toMatchObject({ runnerInstanceId: "ri-new", lifecycle: "connecting", lastConnectionProtocolVersion: null });
    expect(restarted.process?.pid).not.toBe(first.process?.pid);

    const aside = await provider.readFile(sbx.id, bootstrapRestartPath(1));
    expect(JSON.parse(aside ?? "null")).toMatchObject({ runnerInstanceId: "ri-old", lifecycle: "stopped" });

    // And once more: the next one goes to .bootstrap-restart-2.
    await runner.stop(sbx.id);
    await runner.start(sbx.id, { runId: "r2", runnerInstanceId: "ri-third", sessionId: "s-2" });
    expect(JSON.parse((await provider.readFile(sbx.id, bootstrapRestartPath(2))) ?? "null")).toMatchObject({ runnerInstanceId: "ri-new" });
    expect((await readRunnerState(provider, sbx.id))?.runnerInstanceId).toBe("ri-third");
    const files = await t.admin.files(sbx.id);
    for (const p of [RUNNER_STATE_PATH, bootstrapRestartPath(1), bootstrapRestartPath(2)]) expect(files.some((f) => f.endsWith(`/home/${p}`))).toBe(true);
  });

  it("moves provider state aside with the runner state on a restart after a session", async () => {
    const sbx = await sandbox("op-connected");
    await runner.start(sbx.id, { runId: "r3", runnerInstanceId: "ri-1", sessionId: "s-3" });
    await runner.sessionOpen(sbx.id, { timeoutMs: 5000 });
    await runner.stop(sbx.id);
    await runner.start(sbx.id, { runId: "r3", runnerInstanceId: "ri-2", sessionId: "s-3" });
    expect(await provider.readFile(sbx.id, PROVIDER_STATE_PATH)).toBeNull();
    expect((await readRunnerState(provider, sbx.id))?.providerStatePresent).toBe(false);
  });

  it("refuses runner calls on a stopped or missing sandbox, and a stop with no runner is null", async () => {
    const sbx = await sandbox("op-refusals");
    expect(await runner.stop(sbx.id)).toBeNull();
    await expect(runner.sessionOpen(sbx.id, { timeoutMs: 5000 })).rejects.toMatchObject({ status: 404, code: "runner_state_missing" });
    await provider.stop(sbx.id);
    // Daytona answers toolbox calls on a stopped sandbox with 400 "Is the Sandbox started?".
    await expect(runner.start(sbx.id, { runId: "r4", runnerInstanceId: "ri-1", sessionId: "s-4" })).rejects.toMatchObject({ status: 400 });
    await expect(runner.process("00000000-0000-4000-8000-000000000000")).rejects.toMatchObject({ status: 404, code: "sandbox_not_found" });
  });

  it("answers a session.open on an already-ready runner without changing it", async () => {
    const sbx = await sandbox("op-idem");
    await runner.start(sbx.id, { runId: "r5", runnerInstanceId: "ri-1", sessionId: "s-5" });
    const a = await runner.sessionOpen(sbx.id, { timeoutMs: 5000 });
    const b = await runner.sessionOpen(sbx.id, { timeoutMs: 5000 });
    expect(a.ok && b.ok && a.state).toEqual(b.ok && b.state);
  });
});


describe("a turn's budget", () => {
  it("a hung agent command, and the child it spawned, are killed at the budget: the turn is recorded as timed out, once", async () => {
    const sbx = await sandbox("op-hung");
    // The agent starts a child that hangs too, then hangs itself; each writes its pid first.
    const agent = "sh -c 'echo $$ > child.pid; sleep 600' & echo $$ > agent.pid; sleep 600";
    await runner.start(sbx.id, { runId: "r6", runnerInstanceId: "ri-1", sessionId: "s-6", agentCommand: agent });
    await runner.sessionOpen(sbx.id, { timeoutMs: 5000 });
    const started = Date.now();
    const turn = await runner.turn(sbx.id, 1, { budgetMs: 1000 });
    const tookMs = Date.now() - started;
    expect(turn.command).toMatchObject({ seq: 1, timedOut: true, timeoutMs: 1000, exitCode: 124 });
    // The agent and its child die on the SIGTERM: no grace is waited out (the runner's own
    // record says which signal ended it; a wall clock on a loaded machine cannot).
    expect(tookMs).toBeGreaterThanOrEqual(1000);
    // (A bound on durationMs said the same by the clock, and failed at 3,006 ms on a loaded CI
    // machine: SIGTERM is what proves the 2 s grace was not waited out — a grace waited out ends in SIGKILL.)
    expect(turn.command).toMatchObject({ signal: "SIGTERM" });
    const pids = await Promise.all(["agent.pid", "child.pid"].map(async (f) => Number((await provider.readFile(sbx.id, `${WORK_DIR}/${f}`))?.trim())));
    expect(pids.every((p) => p > 0)).toBe(true);
    for (const pid of pids) expect(isProcessRunning(pid)).toBe(false);
    // Durable: the state on disk says so, and the seq is answered from the record, never run again.
    const state = await readRunnerState(provider, sbx.id);
    expect(state).toMatchObject({ inFlight: null, lastControllerCommandSeq: 1, processedCommands: [{ seq: 1, timedOut: true }] });
    expect((await runner.turn(sbx.id, 1, { budgetMs: 1000 })).command).toMatchObject({ seq: 1, timedOut: true });
    expect((await readRunnerState(provider, sbx.id))?.processedCommands).toHaveLength(1);
    // Not run again: a second run would have written its own pid.
    expect(Number((await provider.readFile(sbx.id, `${WORK_DIR}/agent.pid`))?.trim())).toBe(pids[0]);
  });

  it("a runner that hangs does not keep the controller polling: past the budget and the margin the turn gives up with TurnDeadlineError", async () => {
    const sbx = await sandbox("op-hung-runner");
    const started = await runner.start(sbx.id, { runId: "r7", runnerInstanceId: "ri-1", sessionId: "s-7", agentCommand: "sleep 600" });
    await runner.sessionOpen(sbx.id, { timeoutMs: 5000 });
    const pid = started.process!.pid;
    // The runner process stops answering (it is alive, but never runs again).
    process.kill(pid, "SIGSTOP");
    try {
      const t0 = Date.now();
      const err = await runner.turn(sbx.id, 1, { budgetMs: 500, deadlineMarginMs: 1000 }).catch((e: unknown) => e);
      const tookMs = Date.now() - t0;
      expect(TurnDeadlineError.is(err)).toBe(true);
      expect(err).toMatchObject({ seq: 1, deadlineMs: 1500 });
      expect(tookMs).toBeGreaterThanOrEqual(1500);
      expect(tookMs).toBeLessThan(4_000);
    } finally {
      process.kill(pid, "SIGCONT");
      await runner.stop(sbx.id).catch(() => null);
    }
  });
});

describe("a turn that runs past one long poll", () => {
  const executes = (sandboxId: string) => requests.filter((r) => r.startsWith("POST ") && r.includes(sandboxId) && r.endsWith("/process/execute")).length;

  it("is found by reading the runner's record between two long polls: one `ctl turn` process in the sandbox, not one per wait", async () => {
    const sbx = await sandbox("op-long-turn");
    const polled = t.runner(provider, 10_000, { longPollWaitMs: 1_000, longPollEveryMs: 60_000, readEveryMs: 200 });
    await polled.start(sbx.id, { runId: "r8", runnerInstanceId: "ri-1", sessionId: "s-8", agentCommand: "sleep 4; echo done" });
    await polled.sessionOpen(sbx.id, { timeoutMs: 5000 });
    const before = executes(sbx.id);
    const t0 = Date.now();
    const turn = await polled.turn(sbx.id, 1);
    const tookMs = Date.now() - t0;
    expect(turn.command).toMatchObject({ seq: 1, exitCode: 0, outputTail: "done\n" });
    expect(turn.state.processedCommands).toHaveLength(1);
    // Four long polls of a second each before; the record is read within a read's interval of the turn's end.
    expect(executes(sbx.id) - before).toBe(1);
    expect(tookMs).toBeGreaterThanOrEqual(4_000);
    expect(tookMs).toBeLessThan(6_000);
    await polled.stop(sbx.id);
  });

  it("whose runner dies is ended by the next long poll (runner_not_running), not read forever", async () => {
    const sbx = await sandbox("op-long-turn-dead");
    const polled = t.runner(provider, 10_000, { longPollWaitMs: 500, longPollEveryMs: 1_000, readEveryMs: 200 });
    const started = await polled.start(sbx.id, { runId: "r9", runnerInstanceId: "ri-1", sessionId: "s-9", agentCommand: "sleep 600" });
    await polled.sessionOpen(sbx.id, { timeoutMs: 5000 });
    const turn = polled.turn(sbx.id, 1).catch((e: unknown) => e);
    await new Promise((r) => setTimeout(r, 800));
    process.kill(started.process!.pid, "SIGKILL");
    const t0 = Date.now();
    const err = await turn;
    expect(err).toMatchObject({ code: "runner_not_running" });
    expect(Date.now() - t0).toBeLessThan(4_000);
  });
});
