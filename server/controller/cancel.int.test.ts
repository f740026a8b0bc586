import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pino from "pino";
import { ProviderError } from "../providers/errors";
import type { RunnerClient } from "../providers/runner";
import { submitRun } from "../runs/submit";
import { getRunDetail } from "../runs/detail";
import { retryRun } from "../runs/retry";
import { servicesOf, type Services } from "../services";
import { AppError } from "../errors";
import { startControllerHarness, waitFor, type ControllerHarness } from "../test/controller";
import { fenced, isRunLost } from "./fence";
import { sweepTeardown } from "./sweeps";

/**
 * Cancel (docs/rules.md §2.11) against a real controller, the emulator and PostgreSQL: a run
 * cancelled mid-turn is taken over (epoch + 1), its runner stopped and its sandbox destroyed
 * under a fence with an ownership proof; its executor's next write fails by the epoch and the
 * executor lets the run go quietly (never fails, recovers or re-creates it); queued and
 * suspended runs are cancelled and never claimed again; an ended run is refused untouched;
 * two cancels make one cancellation; Retry after Cancel makes one successor.
 */

let h: ControllerHarness;
let services: Services;
let scratch: string;
const board = { id: "ana@example.com", role: "board" };
const all = { all: true } as const;

beforeAll(async () => {
  h = await startControllerHarness();
  services = servicesOf(h.service());
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), "rw-cancel-"));
});
afterAll(async () => {
  await h.close();
  fs.rmSync(scratch, { recursive: true, force: true });
});

const run = (id: string) => h.db.db.run.findUniqueOrThrow({ where: { id } });
const submit = (taskId: string, over: { turns?: number; agentCommand?: string } = {}) =>
  submitRun(h.db.db, "inst-a", { companyId: "co-1", taskId, agent: "a", provider: "codex", sandboxMode: "warm", turns: over.turns ?? 2, agentCommand: over.agentCommand }, board);
const sandboxesOf = async (runId: string) => (await h.emu.admin.sandboxes({ includeDestroyed: true })).filter((s) => s.labels["runwarden.run"] === runId);
const eventsOf = (runId: string) => h.db.db.runEvent.findMany({ where: { runId }, orderBy: { id: "asc" } });

async function turnInFlight(runId: string, runner: RunnerClient) {
  return waitFor("a turn in flight", async () => {
    const lease = await h.db.db.environmentLease.findFirst({ where: { runId, status: "active" } });
    if (!lease?.providerLeaseId) return null;
    const state = await runner.readState(lease.providerLeaseId).catch(() => null);
    return state?.inFlight && state.process ? { sandboxId: lease.providerLeaseId, state } : null;
  });
}

/** Nothing a controller wrote after the `cancelled` event but the teardown's own record. */
async function afterCancel(runId: string) {
  const events = await eventsOf(runId);
  const at = events.findIndex((e) => e.type === "cancelled");
  expect(at).toBeGreaterThanOrEqual(0);
  return { cancelled: events[at]!, later: events.slice(at + 1).map((e) => e.type) };
}

describe("Cancel of a run mid-turn", () => {
  it("takes the run over, stops the turn, destroys the sandbox; the executor's next write fails by epoch and it lets the run go", async () => {
    const marker = path.join(scratch, "mid-turn.txt");
    const agentCommand = `printf '%s start\\n' "$RUNWARDEN_TURN" >> '${marker}'; sleep 4; printf '%s end\\n' "$RUNWARDEN_TURN" >> '${marker}'`;
    const r = await submit("cancel-mid-turn", { turns: 3, agentCommand });
    const c = await h.controller();
    const runner = h.emu.runner(h.emu.provider({ instanceId: "inst-a" }));
    c.start();
    const { sandboxId } = await turnInFlight(r.id, runner);
    const claimed = await run(r.id);
    expect(claimed).toMatchObject({ status: "running", phase: "session_open" });

    const t0 = Date.now();
    const outcome = await services.cancelRun(all, board, r.id, { reason: "wrong prompt" });
    const cancelMs = Date.now() - t0;
    expect(outcome).toEqual({ result: "cancelled", runId: r.id, leases: [{ leaseId: expect.any(String), outcome: "destroyed" }] });
    console.log(`cancel mid-turn answered in ${cancelMs} ms`);

    // The executor's task ends on its own; give it time to try its next write.
    await c.idle();
    await new Promise((res) => setTimeout(res, 500));
    await c.stop("test");
    const after = await run(r.id);
    expect(after).toMatchObject({ status: "cancelled", cancelledBy: board.id, cancelReason: "wrong prompt", executorBootId: null, turnsDone: 0, outcome: null, failureCode: null, recoveryAttempts: 0 });
    expect(after.executorEpoch).toBe(claimed.executorEpoch + 1);
    expect(after.finishedAt).not.toBeNull();

    // The executor's next write, fenced on the epoch it claimed, matches nothing.
    const lost = await fenced(h.service(), { id: r.id, executorEpoch: claimed.executorEpoch })
      .update({ where: { id: r.id }, data: { phase: "finishing" } })
      .catch((err: unknown) => err);
    expect(isRunLost(lost)).toBe(true);

    const { cancelled, later } = await afterCancel(r.id);
    expect(cancelled.data).toMatchObject({ by: board.id, reason: "wrong prompt", epoch: claimed.executorEpoch + 1, previousEpoch: claimed.executorEpoch, wasStatus: "running", executorWas: claimed.executorBootId });
    // The controller neither finished, failed, recovered nor re-created it: only the teardown wrote.
    expect(later).toEqual(["sandbox_destroyed"]);
    // Torn down by the cancel itself, on the claim its transaction took (no sweep in between).
    const destroyed = (await eventsOf(r.id)).find((e) => e.type === "sandbox_destroyed")!;
    expect(destroyed.bootId).toBe(cancelled.bootId);
    expect(destroyed.bootId).not.toBe(claimed.executorBootId);
    expect(await h.db.db.proof.count({ where: { runId: r.id, kind: { in: ["recovery_attempt", "turn_result", "startup_failure"] } } })).toBe(0);
    expect(await h.db.db.proof.findFirst({ where: { runId: r.id, kind: "sandbox_ownership" } })).toMatchObject({ verdict: "owned", sandboxId });

    // The sandbox is gone at the provider, and no other was created.
    const boxes = await sandboxesOf(r.id);
    expect(boxes).toHaveLength(1);
    expect(boxes[0]!.state).toMatch(/^destroy(ing|ed)$/);
    expect(await h.db.db.environmentLease.findMany({ where: { runId: r.id } })).toMatchObject([{ status: "expired", cleanupStatus: "destroyed" }]);
    // The turn was stopped where it stood: it never ended, and no later turn started.
    await new Promise((res) => setTimeout(res, 4_500));
    expect(fs.readFileSync(marker, "utf8").trim().split("\n")).toEqual(["1 start"]);

    // The page: who and why; Retry offered, Cancel not.
    const detail = await getRunDetail(h.db.db, all, r.id);
    expect(detail.run).toMatchObject({ status: "cancelled", cancelledBy: board.id, cancelReason: "wrong prompt" });
    expect(detail.retry.blocker).toBeNull();
    expect(detail.cancel.blocker).toBe("This run was already cancelled by ana@example.com: wrong prompt.");
    const audit = await h.db.db.auditEntry.findFirstOrThrow({ where: { action: "run.cancel", targetId: r.id } });
    expect(audit).toMatchObject({ actor: board.id, outcome: "ok", companyId: "co-1" });
  }, 60_000);

  it("a turn call that fails because the cancel destroyed its sandbox is the takeover's doing: the executor logs a lost run and counts nothing", async () => {
    const r = await submit("cancel-call-fails", { agentCommand: "sleep 600" });
    let cancelled!: () => void;
    const cancelledNow = new Promise<void>((res) => (cancelled = res));
    // The turn's call answers as Daytona's toolbox does for a deleted sandbox, once the cancel committed.
    const c = await h.controller({
      wrapRunner: (inner) =>
        Object.assign(Object.create(inner) as RunnerClient, {
          turn: async () => {
            await cancelledNow;
            throw new ProviderError("http", "runnerd ctl turn --seq 1", "sandbox container not found", { status: 404, code: "not_found" });
          },
        }),
    });
    const lines: Array<{ msg: string; level: number }> = [];
    c.ctx.log = pino({ level: "debug" }, { write: (line: string) => void lines.push(JSON.parse(line) as { msg: string; level: number }) });
    c.start();
    await waitFor("the run to be running", async () => (await run(r.id)).phase === "session_open");
    expect(await services.cancelRun(all, board, r.id, {})).toMatchObject({ result: "cancelled" });
    cancelled();
    await c.idle();
    await c.stop("test");
    expect(lines.map((l) => l.msg)).toContain("run lost: taken over by another controller or cancelled");
    expect(lines.filter((l) => l.level >= 50).map((l) => l.msg)).toEqual([]);
    expect(await run(r.id)).toMatchObject({ status: "cancelled", recoveryAttempts: 0, recoveryErrors: null });
    expect((await afterCancel(r.id)).later).toEqual(["sandbox_destroyed"]);
  }, 60_000);
});

describe("Cancel of a run with no executor at work", () => {
  it("a queued run is cancelled at once and never claimed afterwards", async () => {
    const r = await submit("cancel-queued");
    const outcome = await services.cancelRun(all, board, r.id, {});
    expect(outcome).toEqual({ result: "cancelled", runId: r.id, leases: [] });
    const cancelled = await run(r.id);
    expect(cancelled).toMatchObject({ status: "cancelled", cancelledBy: board.id, cancelReason: null, executorEpoch: 1 });
    const c = await h.controller();
    c.start();
    // A sentinel run submitted after is claimed: the controller did look at the queue.
    const sentinel = await submit("cancel-queued-sentinel", { turns: 1 });
    await waitFor("the sentinel to finish", async () => (await run(sentinel.id)).status === "succeeded");
    await c.stop("test");
    expect(await run(r.id)).toMatchObject({ status: "cancelled", executorEpoch: 1, executorBootId: null, startedAt: null });
    expect((await eventsOf(r.id)).map((e) => e.type)).toEqual(["created", "cancelled"]);
    expect(await sandboxesOf(r.id)).toHaveLength(0);
  }, 60_000);

  it("a suspended run (a drain mid-turn) is cancelled, its sandbox destroyed, and the next controller never recovers it", async () => {
    const r = await submit("cancel-suspended", { agentCommand: "sleep 600" });
    const a = await h.controller({ drainTimeoutMs: 300 });
    const runner = h.emu.runner(h.emu.provider({ instanceId: "inst-a" }));
    a.start();
    const { sandboxId } = await turnInFlight(r.id, runner);
    await a.drain();
    const suspended = await run(r.id);
    expect(suspended).toMatchObject({ status: "suspended", recoveryState: "awaiting_runner_reattach" });

    const outcome = await services.cancelRun(all, board, r.id, { reason: "not needed" });
    expect(outcome).toMatchObject({ result: "cancelled", leases: [{ outcome: "destroyed" }] });
    expect(await run(r.id)).toMatchObject({ status: "cancelled", executorEpoch: suspended.executorEpoch + 1 });
    expect((await h.emu.admin.sandboxes({ includeDestroyed: true })).find((s) => s.id === sandboxId)?.state).toMatch(/^destroy(ing|ed)$/);

    // A new controller (a restart) looks for interrupted runs: this one is not among them.
    const b = await h.controller();
    b.start();
    const sentinel = await submit("cancel-suspended-sentinel", { turns: 1 });
    await waitFor("the sentinel to finish", async () => (await run(sentinel.id)).status === "succeeded");
    await b.stop("test");
    expect(await run(r.id)).toMatchObject({ status: "cancelled", executorEpoch: suspended.executorEpoch + 1 });
    expect(await h.db.db.recoveryClaim.count({ where: { runId: r.id } })).toBe(0);
    expect((await afterCancel(r.id)).later).toEqual(["sandbox_destroyed"]);
  }, 60_000);
});

describe("a teardown that fails", () => {
  it("leaves the lease pending_cleanup, says so in the outcome, and the sweep destroys the sandbox later", async () => {
    const r = await submit("cancel-destroy-fails", { agentCommand: "sleep 600" });
    const c = await h.controller();
    const runner = h.emu.runner(h.emu.provider({ instanceId: "inst-a" }));
    c.start();
    const { sandboxId } = await turnInFlight(r.id, runner);
    // The dashboard's services meet a provider that refuses the destroy (an outage begins).
    const base = h.service();
    const failing = Object.assign(Object.create(base.provider) as typeof base.provider, {
      destroy: () => Promise.reject(new ProviderError("unreachable", "DELETE /sandbox", "connect ECONNREFUSED")),
    });
    const outcome = await servicesOf({ ...base, provider: failing }).cancelRun(all, board, r.id, { reason: "outage" });
    await c.idle();
    await c.stop("test");
    expect(outcome).toMatchObject({ result: "cancelled", leases: [{ outcome: expect.stringMatching(/^pending_cleanup: the teardown failed \(.*ECONNREFUSED.*\); the sweep tries again$/) }] });
    expect(await run(r.id)).toMatchObject({ status: "cancelled" });
    const lease = await h.db.db.environmentLease.findFirstOrThrow({ where: { runId: r.id } });
    expect(lease).toMatchObject({ status: "pending_cleanup", cleanupStatus: "retrying", cleanupAttempts: 1 });

    // Later, a sweep with the provider back (its back-off made due now) finishes it.
    await h.db.db.environmentLease.update({ where: { id: lease.id }, data: { nextCleanupAt: null } });
    await sweepTeardown(h.service(), "test");
    expect(await h.db.db.environmentLease.findUniqueOrThrow({ where: { id: lease.id } })).toMatchObject({ status: "expired", cleanupStatus: "destroyed" });
    expect((await h.emu.admin.sandboxes({ includeDestroyed: true })).find((s) => s.id === sandboxId)?.state).toMatch(/^destroy(ing|ed)$/);
  }, 60_000);
});

describe("what Cancel refuses", () => {
  it("an ended run is refused with its sentence and left exactly as it was; the refusal is audited", async () => {
    const r = await submit("cancel-ended", { turns: 1 });
    const c = await h.controller();
    c.start();
    const done = await waitFor("the run to succeed", async () => {
      const x = await run(r.id);
      return x.status === "succeeded" ? x : null;
    });
    await c.stop("test");
    const events = (await eventsOf(r.id)).length;
    const outcome = await services.cancelRun(all, board, r.id, { reason: "too late" });
    expect(outcome).toEqual({ result: "refused", runId: r.id, reason: "already_ended", refusal: "This run already ended (succeeded); Cancel stops only a run that has not ended." });
    expect(await run(r.id)).toEqual(done);
    expect((await eventsOf(r.id)).length).toBe(events);
    expect(await h.db.db.auditEntry.findFirstOrThrow({ where: { action: "run.cancel", targetId: r.id } })).toMatchObject({ outcome: "refused" });
  }, 60_000);

  it("a run out of the person's scope is NOT_FOUND, and untouched; so is a malformed id", async () => {
    const r = await submit("cancel-scope");
    const err = await services.cancelRun({ all: false, companies: ["co-2"] }, board, r.id, {}).catch((e: unknown) => e);
    expect(AppError.is(err) && err.code).toBe("NOT_FOUND");
    expect(await run(r.id)).toMatchObject({ status: "queued", cancelledBy: null });
    // A malformed id (a caller that skipped the input schema) names no run either.
    const malformed = await services.cancelRun(all, board, "not-a-uuid", {}).catch((e: unknown) => e);
    expect(AppError.is(malformed) && malformed.code).toBe("NOT_FOUND");
    await services.cancelRun(all, board, r.id, {});
  });

  it("two cancels at once (two tabs, a bulk plan and a person): one cancellation, the other refused, no error", async () => {
    const r = await submit("cancel-twice", { agentCommand: "sleep 600" });
    const c = await h.controller();
    const runner = h.emu.runner(h.emu.provider({ instanceId: "inst-a" }));
    c.start();
    await turnInFlight(r.id, runner);
    const before = await run(r.id);
    const outcomes = await Promise.all([
      services.cancelRun(all, board, r.id, { reason: "tab one" }),
      services.cancelRun(all, { id: "bo@example.com", role: "board" }, r.id, { reason: "tab two", planId: "plan-1" }),
    ]);
    await c.idle();
    await c.stop("test");
    expect(outcomes.map((o) => o.result).sort()).toEqual(["cancelled", "refused"]);
    const refused = outcomes.find((o) => o.result === "refused");
    expect(refused).toMatchObject({ reason: "already_cancelled" });
    const after = await run(r.id);
    expect(after.executorEpoch).toBe(before.executorEpoch + 1);
    expect((await eventsOf(r.id)).filter((e) => e.type === "cancelled")).toHaveLength(1);
    expect((await h.db.db.auditEntry.findMany({ where: { action: "run.cancel", targetId: r.id } })).map((a) => a.outcome).sort()).toEqual(["ok", "refused"]);
    expect((await sandboxesOf(r.id)).every((s) => s.state.startsWith("destroy"))).toBe(true);
  }, 60_000);
});

describe("Retry after Cancel", () => {
  it("a cancelled run offers Retry, and Retry makes exactly one successor however often it is asked", async () => {
    const r = await submit("cancel-then-retry");
    await services.cancelRun(all, board, r.id, { reason: "pause" });
    const retries = await Promise.all(Array.from({ length: 5 }, () => retryRun(h.db.db, r.id, board)));
    const successors = new Set(retries.map((x) => x.run.id));
    expect(successors.size).toBe(1);
    expect(retries.filter((x) => x.created)).toHaveLength(1);
    expect(await h.db.db.run.count({ where: { previousRunId: r.id } })).toBe(1);
    const next = retries[0]!.run;
    expect(next).toMatchObject({ status: "queued", taskId: "cancel-then-retry", previousRunId: r.id, cancelledBy: null });
    // The successor is live: it may be cancelled in its turn; the cancelled one stays put.
    expect(await services.cancelRun(all, board, next.id, {})).toMatchObject({ result: "cancelled" });
    expect(await run(r.id)).toMatchObject({ status: "cancelled", cancelReason: "pause" });
  });
});
