import { execFile } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { isProcessRunning } from "../server/test/process";

/**
 * runnerd as the sandbox runs it: a real child process per command, a real detached
 * `serve`, real agent commands in a throwaway HOME.
 */

const RUNNERD = path.resolve(import.meta.dirname, "runnerd.mjs");
const DEMO = path.resolve(import.meta.dirname, "demo-agent.mjs");

interface Result {
  ok: boolean;
  code?: string;
  message?: string;
  pending?: boolean;
  state?: Record<string, unknown> & { processedCommands: Array<Record<string, unknown>>; process: { pid: number; startTicks: number | null } };
  process?: { state: string; pid?: number };
  command?: Record<string, unknown>;
  providerFailure?: Record<string, unknown>;
  definite?: boolean;
}

const homes: Array<{ home: string; env: Record<string, string> }> = [];

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise((r) => server.close(r));
  return port;
}

async function sandbox() {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), "runnerd-test-"));
  // The sandbox's PATH: node and the base system, nothing from this shell.
  const env = { PATH: `${path.dirname(process.execPath)}:/usr/bin:/bin`, HOME: home, RUNWARDEN_INGRESS_PORT: String(await freePort()) };
  const box = { home, env };
  homes.push(box);
  const run = (...args: string[]) =>
    new Promise<{ result: Result; exitCode: number; lines: string[] }>((resolve, reject) => {
      execFile(process.execPath, [RUNNERD, ...args], { env: env as unknown as NodeJS.ProcessEnv, timeout: 30_000 }, (err, stdout) => {
        const lines = stdout.split("\n").filter((l) => l.startsWith("RUNWARDEN_RESULT "));
        if (lines.length !== 1) return reject(new Error(`expected one result line, got ${stdout}`));
        resolve({ result: JSON.parse(lines[0]!.slice("RUNWARDEN_RESULT ".length)) as Result, exitCode: err ? Number((err as { code?: number }).code) : 0, lines });
      });
    });
  return { ...box, run, work: path.join(home, "work"), root: path.join(home, ".runwarden", "runner") };
}

// At the end, not after each: the first suite's cases run side by side, each in a sandbox of its own.
afterAll(async () => {
  for (const { home, env } of homes.splice(0)) {
    await new Promise((r) => execFile(process.execPath, [RUNNERD, "ctl", "stop"], { env: env as unknown as NodeJS.ProcessEnv }, r));
    fs.rmSync(home, { recursive: true, force: true });
  }
});

const ids = (instance = "ri-1") => ["--run", "r1", "--instance", instance, "--session", "s1"];
const marker = (work: string) =>
  fs.existsSync(path.join(work, "runwarden-demo-marker.txt")) ? fs.readFileSync(path.join(work, "runwarden-demo-marker.txt"), "utf8").trim().split("\n") : [];

// Side by side: each case is a chain of node starts (~0.1 s of CPU each), mostly waiting on them.
describe.concurrent("runnerd", () => {
  it("starts once, refuses another instance's live runner, runs each turn exactly once", async () => {
    const sb = await sandbox();
    expect((await sb.run("ctl", "process")).result).toEqual({ ok: true, process: { state: "absent" } });
    const started = await sb.run("start", ...ids(), "--agent-command", `node ${DEMO}`);
    expect(started.exitCode).toBe(0);
    const state = started.result.state!;
    expect(state).toMatchObject({ runId: "r1", runnerInstanceId: "ri-1", lifecycle: "connecting", lastConnectionProtocolVersion: null, lastControllerCommandSeq: 0 });
    // Its identity is the live serve process's, with the kernel's start ticks.
    const stat = fs.readFileSync(`/proc/${state.process.pid}/stat`, "utf8");
    expect(state.process.startTicks).toBe(Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19]));
    expect((await sb.run("start", ...ids())).result.state).toEqual(state);

    const other = await sb.run("start", ...ids("ri-2"));
    expect(other.exitCode).toBe(2);
    expect(other.result.code).toBe("runner_ingress_bind_conflict");

    expect((await sb.run("ctl", "turn", "--seq", "1")).result.code).toBe("runner_not_ready");
    expect((await sb.run("ctl", "session-open")).result.state).toMatchObject({ lifecycle: "ready", lastConnectionProtocolVersion: 1, providerStatePresent: true });
    const t1 = await sb.run("ctl", "turn", "--seq", "1", "--prompt", "do one thing");
    expect(t1.result.command).toMatchObject({ seq: 1, exitCode: 0 });
    expect(String(t1.result.command!.outputTail)).toContain("do one thing");
    await sb.run("ctl", "turn", "--seq", "2");
    expect((await sb.run("ctl", "turn", "--seq", "2")).result.command).toMatchObject({ seq: 2 });
    expect((await sb.run("ctl", "turn", "--seq", "1")).result.command).toMatchObject({ seq: 1 });
    expect(marker(sb.work).map((l) => (JSON.parse(l) as { turn: number }).turn)).toEqual([1, 2]);

    // The durable file is what the runner answered.
    const onDisk = JSON.parse(fs.readFileSync(path.join(sb.root, "runner-state.json"), "utf8")) as Record<string, unknown>;
    expect(onDisk).toMatchObject({ lastControllerCommandSeq: 2, processedCommands: [{ seq: 1 }, { seq: 2 }] });

    expect((await sb.run("ctl", "suspend")).result.state).toMatchObject({ lifecycle: "suspended" });
    expect((await sb.run("ctl", "reattach")).result.state).toMatchObject({ lifecycle: "ready", reconnectCount: 1 });
    expect((await sb.run("ctl", "stop")).result.state).toMatchObject({ lifecycle: "stopped" });
    expect((await sb.run("ctl", "process")).result.process).toMatchObject({ state: "stopped", pid: state.process.pid });
    expect((await sb.run("ctl", "turn", "--seq", "3")).result.code).toBe("runner_not_running");
  });

  it("moves a dead runner's state aside on the next start", async () => {
    const sb = await sandbox();
    const first = (await sb.run("start", ...ids("ri-old"), "--agent-command", "true")).result.state!;
    process.kill(first.process.pid, "SIGKILL");
    await waitFor(() => !fs.existsSync(`/proc/${first.process.pid}`) || fs.readFileSync(`/proc/${first.process.pid}/stat`, "utf8").includes(") Z"));
    expect((await sb.run("ctl", "process")).result.process?.state).toBe("stopped");
    const next = (await sb.run("start", ...ids("ri-new"))).result.state!;
    expect(next.runnerInstanceId).toBe("ri-new");
    const aside = JSON.parse(fs.readFileSync(path.join(sb.root, ".bootstrap-restart-1", "runner-state.json"), "utf8")) as { runnerInstanceId: string };
    expect(aside.runnerInstanceId).toBe("ri-old");
  });

  it("refuses with runner_ingress_bind_conflict when another process holds the ingress", async () => {
    const sb = await sandbox();
    const squatter = net.createServer();
    await new Promise<void>((r) => squatter.listen(Number(sb.env.RUNWARDEN_INGRESS_PORT), "127.0.0.1", r));
    try {
      const r = await sb.run("start", ...ids());
      expect(r.result.code).toBe("runner_ingress_bind_conflict");
      // serve binds before it touches state: nothing was written.
      expect(fs.existsSync(path.join(sb.root, "runner-state.json"))).toBe(false);
    } finally {
      await new Promise((r) => squatter.close(r));
    }
    expect((await sb.run("start", ...ids())).result.ok).toBe(true);
  });

  it("records a failing agent command's exit code and output tail", async () => {
    const sb = await sandbox();
    await sb.run("start", ...ids(), "--agent-command", "echo about to fail; exit 7");
    await sb.run("ctl", "session-open");
    const t = await sb.run("ctl", "turn", "--seq", "1");
    expect(t.result.command).toMatchObject({ seq: 1, exitCode: 7, outputTail: "about to fail\n" });
    expect(t.result.state).toMatchObject({ lastControllerCommandSeq: 1, processedCommands: [{ seq: 1, exitCode: 7 }] });
  });

  it("reports a session command's provider failure as definite", async () => {
    const sb = await sandbox();
    const failure = { kind: "requires_action", category: "authentication", message: "invalid API key" };
    await sb.run("start", ...ids(), "--agent-command", "true", "--session-command", `echo '${JSON.stringify({ providerFailure: failure })}'; exit 1`);
    const r = await sb.run("ctl", "session-open");
    expect(r.result).toMatchObject({ ok: false, code: "session_open_rejected", definite: true, providerFailure: failure });
    expect(r.result.state).toMatchObject({ lifecycle: "unrecoverable", lastConnectionProtocolVersion: null });
  });

  it("answers pending while a turn runs and never starts it twice; a SIGKILLed runner leaves it unprocessed", async () => {
    const sb = await sandbox();
    const started = (await sb.run("start", ...ids(), "--agent-command", `RUNWARDEN_DEMO_SLEEP_MS=1500 node ${DEMO}`)).result.state!;
    await sb.run("ctl", "session-open");
    const pending = await sb.run("ctl", "turn", "--seq", "1", "--wait-ms", "200");
    expect(pending.result).toMatchObject({ ok: true, pending: true, state: { inFlight: { seq: 1 } } });
    const done = await sb.run("ctl", "turn", "--seq", "1");
    expect(done.result.command).toMatchObject({ seq: 1, exitCode: 0 });
    expect(marker(sb.work)).toHaveLength(1);

    await sb.run("ctl", "turn", "--seq", "2", "--wait-ms", "200");
    process.kill(started.process.pid, "SIGKILL");
    const proc = await sb.run("ctl", "process");
    expect(proc.result.process?.state).toBe("stopped");
    expect((await sb.run("ctl", "turn", "--seq", "2")).result.code).toBe("runner_not_running");
    const s = (await sb.run("ctl", "state")).result.state!;
    expect(s).toMatchObject({ lastControllerCommandSeq: 1, inFlight: { seq: 2 } });
    expect(s.processedCommands.map((c) => c.seq)).toEqual([1]);
  });

  it("start --resume goes on from a dead runner's own state: same session, seq and processed turns, a new process", async () => {
    const sb = await sandbox();
    const first = (await sb.run("start", ...ids(), "--agent-command", `node ${DEMO}`)).result.state!;
    await sb.run("ctl", "session-open");
    await sb.run("ctl", "turn", "--seq", "1");
    await sb.run("ctl", "suspend");
    // What auto-stop does to the runner: the process dies, the file stays.
    process.kill(first.process.pid, "SIGKILL");
    await waitFor(() => !fs.existsSync(`/proc/${first.process.pid}`) || fs.readFileSync(`/proc/${first.process.pid}/stat`, "utf8").includes(") Z"));
    expect((await sb.run("ctl", "reattach")).result.code).toBe("runner_not_running");

    const resumed = await sb.run("start", "--resume", ...ids());
    expect(resumed.exitCode).toBe(0);
    expect(resumed.result.state).toMatchObject({ runnerInstanceId: "ri-1", sessionId: "s1", lifecycle: "suspended", lastControllerCommandSeq: 1, resumes: 1 });
    expect(resumed.result.state!.process.pid).not.toBe(first.process.pid);
    expect(resumed.result.state!.processedCommands.map((c) => c.seq)).toEqual([1]);
    // Nothing was moved aside: it is the same runner going on.
    expect(fs.existsSync(path.join(sb.root, ".bootstrap-restart-1"))).toBe(false);
    expect((await sb.run("ctl", "reattach")).result.state).toMatchObject({ lifecycle: "ready", reconnectCount: 1 });
    // Turn 1 is answered from the record, never run again; turn 2 runs once.
    expect((await sb.run("ctl", "turn", "--seq", "1")).result.command).toMatchObject({ seq: 1 });
    expect((await sb.run("ctl", "turn", "--seq", "2")).result.command).toMatchObject({ seq: 2, exitCode: 0 });
    expect(marker(sb.work).map((l) => (JSON.parse(l) as { turn: number }).turn)).toEqual([1, 2]);
    // A resume of a live runner changes nothing.
    const again = await sb.run("start", "--resume", ...ids());
    expect(again.result.state!.process.pid).toBe(resumed.result.state!.process.pid);
  });

  it("start --resume refuses a turn cut short, another runner's state, and no state", async () => {
    const sb = await sandbox();
    expect((await sb.run("start", "--resume", ...ids())).result).toMatchObject({ ok: false, code: "runner_not_resumable" });
    const first = (await sb.run("start", ...ids(), "--agent-command", `RUNWARDEN_DEMO_SLEEP_MS=1500 node ${DEMO}`)).result.state!;
    await sb.run("ctl", "session-open");
    await sb.run("ctl", "turn", "--seq", "1", "--wait-ms", "200");
    process.kill(first.process.pid, "SIGKILL");
    await waitFor(() => !fs.existsSync(`/proc/${first.process.pid}`) || fs.readFileSync(`/proc/${first.process.pid}/stat`, "utf8").includes(") Z"));
    const cut = await sb.run("start", "--resume", ...ids());
    expect(cut.exitCode).toBe(2);
    expect(cut.result).toMatchObject({ ok: false, code: "runner_not_resumable", message: expect.stringMatching(/turn 1 was in flight/) });
    expect((await sb.run("start", "--resume", ...ids("ri-other"))).result).toMatchObject({ ok: false, code: "runner_not_resumable" });
    expect((await sb.run("ctl", "process")).result.process?.state).toBe("stopped");
  });
});

describe("runnerd: a turn's budget", () => {
  it("kills a hung turn's whole process group at its budget (a child that ignores SIGTERM included) and records it as timed out, once", async () => {
    const sb = await sandbox();
    const pids = path.join(sb.home, "pids");
    // The agent starts a child that ignores SIGTERM and hangs, then hangs itself.
    const agent = `sh -c 'trap "" TERM; echo $$ > ${pids}.child; sleep 600' & echo $$ > ${pids}.shell; sleep 600`;
    await sb.run("start", ...ids(), "--agent-command", agent);
    await sb.run("ctl", "session-open");
    const started = Date.now();
    const t = await sb.run("ctl", "turn", "--seq", "1", "--timeout-ms", "800");
    const tookMs = Date.now() - started;
    expect(t.result.command).toMatchObject({ seq: 1, timedOut: true, timeoutMs: 800, exitCode: 124 });
    expect(String(t.result.command!.outputTail)).toContain("ran past its budget of 800 ms");
    // The budget, the SIGTERM grace (the child ignores it), the SIGKILL: a few seconds at most.
    expect(tookMs).toBeGreaterThanOrEqual(800);
    expect(tookMs).toBeLessThan(6_000);
    for (const f of [`${pids}.shell`, `${pids}.child`]) expect(isProcessRunning(Number(fs.readFileSync(f, "utf8")))).toBe(false);
    // Durable: the record is on disk, and the seq is answered from it, never run again.
    const onDisk = JSON.parse(fs.readFileSync(path.join(sb.root, "runner-state.json"), "utf8")) as { processedCommands: unknown[]; inFlight: unknown };
    expect(onDisk).toMatchObject({ inFlight: null, processedCommands: [{ seq: 1, timedOut: true }] });
    fs.rmSync(`${pids}.shell`);
    expect((await sb.run("ctl", "turn", "--seq", "1", "--timeout-ms", "800")).result.command).toMatchObject({ seq: 1, timedOut: true });
    expect(fs.existsSync(`${pids}.shell`)).toBe(false);
  });

  it("a turn that finishes within its budget is recorded as not timed out", async () => {
    const sb = await sandbox();
    await sb.run("start", ...ids(), "--agent-command", "echo quick");
    await sb.run("ctl", "session-open");
    const t = await sb.run("ctl", "turn", "--seq", "1", "--timeout-ms", "5000");
    expect(t.result.command).toMatchObject({ seq: 1, exitCode: 0, timedOut: false, timeoutMs: 5000 });
  });

  it("a stopped runner leaves no agent behind", async () => {
    const sb = await sandbox();
    const pid = path.join(sb.home, "agent.pid");
    await sb.run("start", ...ids(), "--agent-command", `echo $$ > ${pid}; sleep 600`);
    await sb.run("ctl", "session-open");
    await sb.run("ctl", "turn", "--seq", "1", "--wait-ms", "300");
    await waitFor(() => fs.existsSync(pid) && fs.readFileSync(pid, "utf8").trim() !== "");
    await sb.run("ctl", "stop");
    await waitFor(() => !isProcessRunning(Number(fs.readFileSync(pid, "utf8"))), 3_000);
  });
});


async function waitFor(fn: () => boolean, ms = 5000) {
  const until = Date.now() + ms;
  while (!fn()) {
    if (Date.now() > until) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 20));
  }
}
