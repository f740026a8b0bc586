import { execFile } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { processedCommandSchema, RUNNER_PROTOCOL_VERSION, RUNNERD_ANSWERS, runnerWireStateSchema, type RunnerdCommand } from "../server/engine";

/**
 * Every answer the real runnerd prints, parsed with the engine's schemas
 * (server/engine/runner-state.ts, docs/runner.md): a real child process per command, a real
 * detached `serve`, real agent and session commands in a throwaway HOME. Parsing must keep
 * everything: a field the schemas (and so docs/runner.md) do not name is a failure too.
 */

const RUNNERD = path.resolve(import.meta.dirname, "runnerd.mjs");
const RESULT_PREFIX = "RUNWARDEN_RESULT ";

const homes: Array<{ home: string; env: Record<string, string> }> = [];
/** What each command answered with (`ok` or the refusal code), for the coverage check at the end. */
const seen = new Map<RunnerdCommand, Set<string>>();

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise((r) => server.close(r));
  return port;
}

type Answer = Record<string, unknown> & { ok: boolean; code?: string; state?: Record<string, unknown> | null };

/** The one result line's JSON, checked against the command's schema; each processed command against its own. */
function checked(command: RunnerdCommand, answer: Answer): Answer {
  const parsed = RUNNERD_ANSWERS[command].safeParse(answer);
  if (!parsed.success) throw new Error(`runnerd ${command} printed an answer its schema refuses: ${parsed.error.message}\n${JSON.stringify(answer)}`);
  expect(parsed.data, `runnerd ${command}: fields the schema does not name`).toEqual(answer);
  if (answer.state) {
    const state = runnerWireStateSchema.parse(answer.state);
    for (const c of state.processedCommands) expect(processedCommandSchema.parse(c)).toEqual(c);
  }
  const outcome = answer.ok ? ("pending" in answer ? "pending" : "ok") : String(answer.code);
  (seen.get(command) ?? seen.set(command, new Set()).get(command)!).add(outcome);
  return answer;
}

async function sandbox(agentCommand: string, sessionCommand?: string) {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), "runnerd-schema-"));
  const env = { PATH: `${path.dirname(process.execPath)}:/usr/bin:/bin`, HOME: home, RUNWARDEN_INGRESS_PORT: String(await freePort()) };
  homes.push({ home, env });
  const exec = (args: string[]) =>
    new Promise<Answer>((resolve, reject) => {
      execFile(process.execPath, [RUNNERD, ...args], { env: env as unknown as NodeJS.ProcessEnv, timeout: 30_000 }, (_err, stdout) => {
        const lines = stdout.split("\n").filter((l) => l.startsWith(RESULT_PREFIX));
        if (lines.length !== 1) return reject(new Error(`expected one result line, got ${stdout}`));
        resolve(JSON.parse(lines[0]!.slice(RESULT_PREFIX.length)) as Answer);
      });
    });
  const ids = ["--run", "r1", "--instance", "ri-1", "--session", "s1"];
  return {
    start: async () => checked("start", await exec(["start", ...ids, "--agent-command", agentCommand, ...(sessionCommand ? ["--session-command", sessionCommand] : [])])),
    resume: async () => checked("start --resume", await exec(["start", "--resume", ...ids])),
    ctl: async (op: Exclude<RunnerdCommand, "start" | "start --resume">, ...args: string[]) => checked(op, await exec(["ctl", op, ...args])),
  };
}

afterAll(async () => {
  for (const { home, env } of homes.splice(0)) {
    await new Promise((r) => execFile(process.execPath, [RUNNERD, "ctl", "stop"], { env: env as unknown as NodeJS.ProcessEnv }, r));
    fs.rmSync(home, { recursive: true, force: true });
  }
});

describe("runnerd's answers against the engine's schemas", () => {
  describe.concurrent("every ctl operation", () => {
    it("a runner's whole life: start, session-open, turns, suspend, reattach, a kill, resume, stop", async () => {
      // Turn 2 sleeps, so a short --wait-ms answers pending.
      const sb = await sandbox(`[ "$RUNWARDEN_TURN" = 2 ] && sleep 1; echo "turn $RUNWARDEN_TURN"`);
      expect((await sb.ctl("state")).state).toBeNull();
      expect(await sb.ctl("process")).toEqual({ ok: true, process: { state: "absent" } });
      expect((await sb.ctl("stop")).state).toBeNull();
      expect((await sb.ctl("reattach")).code).toBe("runner_state_missing");
      expect((await sb.resume()).code).toBe("runner_not_resumable");

      const started = await sb.start();
      expect(started.state).toMatchObject({ lifecycle: "connecting", lastConnectionProtocolVersion: null });
      expect((await sb.start()).state).toEqual(started.state);
      expect((await sb.ctl("reattach")).code).toBe("runner_never_connected");
      expect((await sb.ctl("turn", "--seq", "1")).code).toBe("runner_not_ready");

      expect((await sb.ctl("session-open")).state).toMatchObject({ lifecycle: "ready", lastConnectionProtocolVersion: RUNNER_PROTOCOL_VERSION, providerStatePresent: true });
      expect((await sb.ctl("session-open")).ok).toBe(true);

      const first = await sb.ctl("turn", "--seq", "1", "--prompt", "hello", "--timeout-ms", "20000");
      expect(first.command).toMatchObject({ seq: 1, exitCode: 0, timedOut: false, timeoutMs: 20000 });
      expect((await sb.ctl("turn", "--seq", "1")).command).toEqual(first.command);
      expect((await sb.ctl("turn", "--seq", "2", "--wait-ms", "100")).pending).toBe(true);
      expect((await sb.ctl("turn", "--seq", "2")).command).toMatchObject({ seq: 2, exitCode: 0 });
      expect((await sb.ctl("turn", "--seq", "0")).code).toBe("runner_bad_request");

      expect((await sb.ctl("suspend")).state).toMatchObject({ lifecycle: "suspended" });
      expect((await sb.ctl("suspend")).state).toMatchObject({ lifecycle: "suspended" });
      expect((await sb.ctl("reattach")).state).toMatchObject({ lifecycle: "ready", reconnectCount: 1 });
      const running = await sb.ctl("process");
      expect(running.process).toMatchObject({ state: "running" });
      expect((await sb.ctl("state")).state).toMatchObject({ lifecycle: "ready" });

      // The runner dies (its sandbox stopped): its state stays, a new process resumes it.
      process.kill((running.process as { pid: number }).pid, "SIGKILL");
      const stateOf = async () => ((await sb.ctl("process")).process as { state: string }).state;
      for (let i = 0; i < 100 && (await stateOf()) !== "stopped"; i++) await new Promise((r) => setTimeout(r, 20));
      expect((await sb.ctl("turn", "--seq", "3")).code).toBe("runner_not_running");
      expect((await sb.resume()).state).toMatchObject({ lifecycle: "ready", resumes: 1 });
      expect((await sb.resume()).state).toMatchObject({ resumes: 1 });

      expect((await sb.ctl("stop")).state).toMatchObject({ lifecycle: "stopped" });
      expect((await sb.ctl("stop")).state).toMatchObject({ lifecycle: "stopped" });
      expect((await sb.ctl("process")).process).toMatchObject({ state: "stopped" });
      expect((await sb.ctl("suspend")).code).toBe("runner_not_running");
    });

    it("session-open: a definite provider failure", async () => {
      const failure = { kind: "requires_action", category: "authentication", message: "invalid x-api-key" };
      const sb = await sandbox("true", `echo '${JSON.stringify({ providerFailure: failure })}'; exit 1`);
      await sb.start();
      expect(await sb.ctl("session-open")).toMatchObject({ ok: false, code: "session_open_rejected", definite: true, providerFailure: failure, state: { lifecycle: "unrecoverable" } });
      expect((await sb.ctl("session-open")).code).toBe("runner_not_connecting");
    });

    it("session-open: a session command that fails without a provider failure", async () => {
      const sb = await sandbox("true", "echo nope; exit 3");
      await sb.start();
      expect(await sb.ctl("session-open")).toMatchObject({ ok: false, code: "session_command_failed", definite: false, state: { lifecycle: "recoverable_failure" } });
    });

    it("session-open: no answer within --wait-ms, then a later open", async () => {
      const sb = await sandbox("true", "sleep 1");
      await sb.start();
      expect(await sb.ctl("session-open", "--wait-ms", "100")).toMatchObject({ ok: false, code: "session_open_pending", definite: false, state: { lifecycle: "connecting" } });
      expect((await sb.ctl("session-open")).state).toMatchObject({ lifecycle: "ready" });
    });
  });

  it("covered a success of every command runnerd has", () => {
    for (const command of Object.keys(RUNNERD_ANSWERS) as RunnerdCommand[]) expect([...(seen.get(command) ?? [])], command).toContain("ok");
    expect([...(seen.get("turn") ?? [])]).toContain("pending");
  });
});
