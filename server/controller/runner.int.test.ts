import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { retryRun } from "../runs/retry";
import { submitRun } from "../runs/submit";
import { getRunDetail } from "../runs/detail";
import { spawnController, type ControllerProcessHandle } from "../test/controller-process";
import { startControllerHarness, waitFor, type ControllerHarness } from "../test/controller";
import { tempDirs } from "../test/temp";

const home = tempDirs("rw-ctl-home-");

/**
 * Runs doing real work through the real runner (docs/daytona.md, "The runner inside the sandbox"): the agent command is a real
 * shell command in the sandbox, counted by the lines it appends to a marker file.
 */

let h: ControllerHarness;
const live: ControllerProcessHandle[] = [];
const actor = { id: "test", role: "board" };
let scratch: string;

beforeAll(async () => {
  h = await startControllerHarness();
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), "rw-markers-"));
});
afterEach(async () => {
  for (const p of live.splice(0)) {
    p.kill("SIGKILL");
    await p.exited;
  }
});
afterAll(async () => {
  await h.close();
  fs.rmSync(scratch, { recursive: true, force: true });
});

async function controller(env: Record<string, string> = {}): Promise<ControllerProcessHandle> {
  const p = spawnController({
    DATABASE_URL: h.db.url,
    EMULATOR_URL: h.emu.emulator.url,
    RUNWARDEN_INSTANCE_ID: "inst-a",
    RUNWARDEN_CONTROLLER_HOME: home(),
    ...env,
  });
  live.push(p);
  await p.ready;
  return p;
}

const run = (id: string) => h.db.db.run.findUniqueOrThrow({ where: { id } });
const settled = (runId: string, timeoutMs = 60_000) =>
  waitFor(`run ${runId} to settle`, async () => {
    const r = await run(runId);
    return r.status === "succeeded" || r.status === "failed" ? r : null;
  }, timeoutMs);

/** An agent command that appends its turn to a marker file outside the sandbox (it outlives the sandbox). */
function markerCommand(name: string, extra = ""): { command: string; lines: () => number[] } {
  const file = path.join(scratch, `${name}.txt`);
  return {
    command: `${extra}printf '%s\\n' "$RUNWARDEN_TURN" >> '${file}'`,
    lines: () => (fs.existsSync(file) ? fs.readFileSync(file, "utf8").trim().split("\n").filter(Boolean).map(Number) : []),
  };
}

describe("turns run the agent command in the sandbox", () => {
  it("an agent command that exits non-zero ends the run with agent_command_failed, owner agent, Retry, and its turn log", async () => {
    const r = await submitRun(
      h.db.db,
      "inst-a",
      { companyId: "co-1", taskId: "agent-fails", agent: "a", provider: "codex", turns: 3, agentCommand: "echo \"turn $RUNWARDEN_TURN of $RUNWARDEN_RUN_ID\"; echo 'model refused' >&2; exit 3" },
      actor,
    );
    const c = await h.controller();
    c.start();
    const done = await settled(r.id);
    await c.stop("test");
    expect(done).toMatchObject({ status: "failed", failureCode: "agent_command_failed", owner: "agent", canRetry: true, outcome: "terminal_failure", turnsDone: 0 });
    const detail = await getRunDetail(h.db.db, { all: true }, r.id);
    expect(detail.turnLog).toHaveLength(1);
    expect(detail.turnLog[0]).toMatchObject({ turn: 1, exitCode: 3 });
    expect(detail.turnLog[0]!.outputTail).toContain(`turn 1 of ${r.id}`);
    expect(detail.turnLog[0]!.outputTail).toContain("model refused");
    expect(detail.run.agentCommand).toContain("exit 3");
    const retried = await retryRun(h.db.db, r.id, actor);
    expect(retried).toMatchObject({ created: true });
  });

  it("a successful run writes exactly one marker line per turn", async () => {
    const m = markerCommand("plain");
    const r = await submitRun(h.db.db, "inst-a", { companyId: "co-1", taskId: "agent-ok", agent: "a", provider: "codex", turns: 3, agentCommand: m.command }, actor);
    const c = await h.controller();
    c.start();
    expect((await settled(r.id)).status).toBe("succeeded");
    await c.stop("test");
    expect(m.lines()).toEqual([1, 2, 3]);
    const detail = await getRunDetail(h.db.db, { all: true }, r.id);
    expect(detail.turnLog.map((t) => [t.turn, t.exitCode])).toEqual([
      [1, 0],
      [2, 0],
      [3, 0],
    ]);
  });
});

describe("kills around a turn", () => {
  it("the controller SIGKILLed between a turn's execution and its checkpoint: the turn's side effect happens exactly once", async () => {
    const m = markerCommand("ctl-kill");
    const r = await submitRun(h.db.db, "inst-a", { companyId: "co-1", taskId: "ctl-kill", agent: "a", provider: "codex", turns: 3, agentCommand: m.command }, actor);
    const a = await controller({ RUNWARDEN_CRASH_AT: "after_turn_executed" });
    await a.exited;
    // The turn ran in the sandbox; the run's checkpoint does not know it yet.
    expect(m.lines()).toEqual([1]);
    expect((await run(r.id)).turnsDone).toBe(0);
    await controller();
    const done = await settled(r.id);
    expect(done.status).toBe("succeeded");
    expect(m.lines()).toEqual([1, 2, 3]);
    const claim = await h.db.db.recoveryClaim.findFirstOrThrow({ where: { runId: r.id } });
    expect(claim).toMatchObject({ kind: "reattach_remote_runner", disposition: "admitted" });
  });

  it("runnerd SIGKILLed mid-turn: the turn is never recorded as processed, and the run ends by the engine's verdict", async () => {
    const m = markerCommand("runnerd-kill", "sleep 2; ");
    const r = await submitRun(h.db.db, "inst-a", { companyId: "co-1", taskId: "runnerd-kill", agent: "a", provider: "codex", turns: 2, agentCommand: m.command }, actor);
    const c = await h.controller();
    c.start();
    const provider = h.emu.provider();
    const runner = h.emu.runner(provider);
    const { sandboxId, pid } = await waitFor("a turn in flight", async () => {
      const lease = await h.db.db.environmentLease.findFirst({ where: { runId: r.id, status: "active" } });
      if (!lease?.providerLeaseId) return null;
      const state = await runner.readState(lease.providerLeaseId).catch(() => null);
      return state?.inFlight && state.process ? { sandboxId: lease.providerLeaseId, pid: state.process.pid } : null;
    });
    process.kill(pid, "SIGKILL");
    expect((await runner.process(sandboxId)).state).toBe("stopped");
    const done = await waitFor("the run to leave the killed runner", async () => {
      const x = await run(r.id);
      return x.status === "failed" || x.status === "succeeded" || x.failureCode ? x : null;
    }, 60_000);
    await c.stop("test");
    // What the runner recorded never includes the killed turn.
    const state = await runner.readState(sandboxId).catch(() => null);
    if (state) expect(state.processedCommands.map((p) => (p as { seq: number }).seq)).not.toContain(state.inFlight?.seq ?? -1);
    // A turn cut short may have half-happened: the dead runner is not resumed (runner_resume
    // refuses on the turn in flight), and the run rests in that verdict's code with Retry.
    expect(done).toMatchObject({ status: "failed", failureCode: "runner_not_resumable", canRetry: true });
    const resume = await h.db.db.proof.findFirstOrThrow({ where: { runId: r.id, kind: "runner_resume" }, orderBy: { evaluatedAt: "desc" } });
    expect(resume).toMatchObject({ verdict: "refused", code: "runner_not_resumable" });
    expect((resume.output as { reason: string }).reason).toBe("turn_in_flight");
    const events = await h.db.db.runEvent.findMany({ where: { runId: r.id }, orderBy: { id: "asc" } });
    expect(events.map((e) => e.type)).not.toContain("turn_done");
  });
});
