import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunnerClient } from "../providers/runner";
import { submitRun } from "../runs/submit";
import { getRunDetail } from "../runs/detail";
import { retryRun } from "../runs/retry";
import { startControllerHarness, waitFor, type ControllerHarness } from "../test/controller";
import { isProcessRunning } from "../test/process";

/**
 * A turn has a deadline (docs/rules.md, "Turns"): a hung agent is killed at the turn's budget and
 * the run ends with `agent_turn_timeout`; a hung runner does not keep the controller polling;
 * a drain waits for a turn in flight at most its own bound, then suspends the run, which the
 * next controller recovers without running the turn again.
 */

let h: ControllerHarness;
let scratch: string;
const actor = { id: "test", role: "board" };

beforeAll(async () => {
  h = await startControllerHarness();
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), "rw-turn-timeout-"));
});
afterAll(async () => {
  await h.close();
  fs.rmSync(scratch, { recursive: true, force: true });
});

const run = (id: string) => h.db.db.run.findUniqueOrThrow({ where: { id } });
const settled = (runId: string, timeoutMs = 30_000) =>
  waitFor(`run ${runId} to settle`, async () => {
    const r = await run(runId);
    return r.status === "succeeded" || r.status === "failed" ? r : null;
  }, timeoutMs);


async function sandboxesOf(runId: string) {
  return (await h.emu.admin.sandboxes({ includeDestroyed: true })).filter((s) => s.labels["runwarden.run"] === runId);
}

/** The run's sandbox and runner state once a turn is in flight. */
async function turnInFlight(runId: string, runner: RunnerClient) {
  return waitFor("a turn in flight", async () => {
    const lease = await h.db.db.environmentLease.findFirst({ where: { runId, status: "active" } });
    if (!lease?.providerLeaseId) return null;
    const state = await runner.readState(lease.providerLeaseId).catch(() => null);
    return state?.inFlight && state.process ? { sandboxId: lease.providerLeaseId, state } : null;
  });
}

describe("a turn past its budget", () => {
  it("a hung agent command ends the run failed with agent_turn_timeout (owner agent, Retry), a turn_result proof, its processes killed and its sandbox torn down", async () => {
    const pids = path.join(scratch, "hung");
    const agentCommand = `sh -c 'echo $$ > ${pids}.child; sleep 600' & echo $$ > ${pids}.agent; sleep 600`;
    const r = await submitRun(h.db.db, "inst-a", { companyId: "co-1", taskId: "hung-agent", agent: "a", provider: "codex", sandboxMode: "warm", turns: 2, agentCommand }, actor);
    const c = await h.controller({ turnTimeoutMs: 1_000 });
    c.start();
    const done = await settled(r.id);
    await c.stop("test");
    expect(done).toMatchObject({ status: "failed", failureCode: "agent_turn_timeout", owner: "agent", canRetry: true, outcome: "terminal_failure", turnsDone: 0 });
    expect(done.failureDetail).toMatch(/ran past its budget of 1000 ms/);
    const proof = await h.db.db.proof.findFirstOrThrow({ where: { runId: r.id, kind: "turn_result" } });
    expect(proof).toMatchObject({ verdict: "turn_failed", code: "agent_turn_timeout" });
    expect((proof.output as { reason: string }).reason).toBe("turn_timed_out");
    expect(proof.evidence).toMatchObject({ expectedSeq: 1, budgetMs: 1000, record: { seq: 1, timedOut: true } });
    for (const f of [`${pids}.agent`, `${pids}.child`]) expect(isProcessRunning(Number(fs.readFileSync(f, "utf8")))).toBe(false);
    // The turn log says what happened; the sandbox is gone.
    const detail = await getRunDetail(h.db.db, { all: true }, r.id);
    expect(detail.turnLog).toHaveLength(1);
    expect(detail.turnLog[0]!.outputTail).toContain("ran past its budget");
    await waitFor("the lease to be torn down", async () => {
      const leases = await h.db.db.environmentLease.findMany({ where: { runId: r.id } });
      return leases.length === 1 && leases[0]!.status === "expired";
    });
    const boxes = await sandboxesOf(r.id);
    expect(boxes).toHaveLength(1);
    expect(boxes[0]!.state).toMatch(/^destroy(ing|ed)$/);
  }, 60_000);

  it("a run's own turn budget wins over the controller's default; its Retry keeps it; a run without one runs under the default", async () => {
    const agentCommand = "sleep 3";
    const own = await submitRun(h.db.db, "inst-a", { companyId: "co-1", taskId: "own-budget", agent: "a", provider: "codex", sandboxMode: "warm", turns: 1, agentCommand, turnTimeoutMs: 1_000 }, actor);
    const plain = await submitRun(h.db.db, "inst-a", { companyId: "co-1", taskId: "default-budget", agent: "a", provider: "codex", sandboxMode: "warm", turns: 1, agentCommand }, actor);
    const c = await h.controller({ turnTimeoutMs: 60_000 });
    c.start();
    const [ownDone, plainDone] = await Promise.all([settled(own.id), settled(plain.id)]);
    expect(ownDone).toMatchObject({ status: "failed", failureCode: "agent_turn_timeout", canRetry: true, turnTimeoutMs: 1_000 });
    expect(ownDone.failureDetail).toMatch(/ran past its budget of 1000 ms/);
    expect(plainDone).toMatchObject({ status: "succeeded", turnsDone: 1, turnTimeoutMs: null });
    const retried = await retryRun(h.db.db, own.id, actor);
    expect(retried.run.turnTimeoutMs).toBe(1_000);
    const retryDone = await settled(retried.run.id);
    await c.stop("test");
    expect(retryDone).toMatchObject({ status: "failed", failureCode: "agent_turn_timeout" });
    const proof = await h.db.db.proof.findFirstOrThrow({ where: { runId: retried.run.id, kind: "turn_result" } });
    expect(proof.evidence).toMatchObject({ budgetMs: 1000, record: { timedOut: true } });
    expect((await getRunDetail(h.db.db, { all: true }, own.id)).run.turnTimeoutMs).toBe(1_000);
  }, 60_000);

  it("a runner that hangs mid-turn: past the budget and the margin the controller stops polling and the run ends with agent_turn_timeout", async () => {
    const r = await submitRun(h.db.db, "inst-a", { companyId: "co-1", taskId: "hung-runner", agent: "a", provider: "codex", sandboxMode: "warm", turns: 1, agentCommand: "sleep 600" }, actor);
    const c = await h.controller({ turnTimeoutMs: 2_000, turnDeadlineMarginMs: 1_000 });
    // The runner stops answering as the turn starts (alive, but never scheduled again).
    const runner = h.emu.runner(h.emu.provider({ instanceId: "inst-a" }));
    c.start();
    const { state } = await turnInFlight(r.id, runner);
    process.kill(state.process!.pid, "SIGSTOP");
    // The stopped runner never records the turn: only the controller's own deadline ends it.
    const done = await settled(r.id, 30_000);
    await c.stop("test");
    expect(done).toMatchObject({ status: "failed", failureCode: "agent_turn_timeout", owner: "agent", canRetry: true });
    const proof = await h.db.db.proof.findFirstOrThrow({ where: { runId: r.id, kind: "turn_result" } });
    expect(proof).toMatchObject({ verdict: "turn_failed", code: "agent_turn_timeout" });
    expect((proof.output as { reason: string }).reason).toBe("no_record_within_deadline");
    expect(proof.evidence).toMatchObject({ record: null, budgetMs: 2_000, deadline: { deadlineMs: 3_000 } });
    await waitFor("the sandbox to be torn down", async () => ((await sandboxesOf(r.id))[0]?.state ?? "").startsWith("destroy"));
  }, 90_000);
});

describe("a drain while a turn is in flight", () => {
  it("a drain with a hung turn finishes within its bound and the run is suspended where it stands", async () => {
    const r = await submitRun(h.db.db, "inst-a", { companyId: "co-1", taskId: "drain-hung", agent: "a", provider: "codex", sandboxMode: "warm", turns: 2, agentCommand: "sleep 600" }, actor);
    const c = await h.controller({ drainTimeoutMs: 500 });
    const runner = h.emu.runner(h.emu.provider({ instanceId: "inst-a" }));
    c.start();
    const { sandboxId } = await turnInFlight(r.id, runner);
    try {
      const t0 = Date.now();
      await c.drain();
      const drainMs = Date.now() - t0;
      expect(drainMs).toBeGreaterThanOrEqual(500);
      expect(drainMs).toBeLessThan(3_000);
      expect(await run(r.id)).toMatchObject({ status: "suspended", recoveryState: "awaiting_runner_reattach", phase: "session_open", turnsDone: 0 });
      // The runner was asked to suspend, and goes on with the turn (it is the runner's to record).
      expect(await runner.readState(sandboxId)).toMatchObject({ lifecycle: "suspended", inFlight: { seq: 1 } });
    } finally {
      // Not left for the other tests' controllers: the hung sandbox goes.
      await h.db.db.run.update({ where: { id: r.id }, data: { status: "cancelled", executorBootId: null } });
      await h.emu.provider({ instanceId: "inst-a" }).destroy(sandboxId);
    }
  }, 60_000);

  it("a run suspended mid-turn by a drain past its bound is recovered by the next controller: the turn is answered from the runner's record, never run twice", async () => {
    const marker = path.join(scratch, "drain-marker.txt");
    const agentCommand = `sleep 3; printf '%s\\n' "$RUNWARDEN_TURN" >> '${marker}'`;
    const r = await submitRun(h.db.db, "inst-a", { companyId: "co-1", taskId: "drain-recover", agent: "a", provider: "codex", sandboxMode: "warm", turns: 2, agentCommand }, actor);
    const a = await h.controller({ drainTimeoutMs: 300 });
    const runner = h.emu.runner(h.emu.provider({ instanceId: "inst-a" }));
    a.start();
    await turnInFlight(r.id, runner);
    const t0 = Date.now();
    await a.drain();
    expect(Date.now() - t0).toBeLessThan(2_500);
    expect(await run(r.id)).toMatchObject({ status: "suspended", turnsDone: 0 });
    const b = await h.controller();
    b.start();
    const done = await settled(r.id, 60_000);
    await b.stop("test");
    expect(done).toMatchObject({ status: "succeeded", turnsDone: 2 });
    expect(fs.readFileSync(marker, "utf8").trim().split("\n")).toEqual(["1", "2"]);
    const claim = await h.db.db.recoveryClaim.findFirstOrThrow({ where: { runId: r.id } });
    expect(claim).toMatchObject({ kind: "reattach_remote_runner", restartKind: "graceful", disposition: "admitted" });
  }, 90_000);
});
