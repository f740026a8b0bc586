import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { retryRun } from "../runs/retry";
import { submitRun } from "../runs/submit";
import type { Controller } from "./controller";
import { startControllerHarness, waitFor, type ControllerHarness } from "../test/controller";

let h: ControllerHarness;
let c: Controller;
const actor = { id: "test", role: "board" };

beforeAll(async () => {
  h = await startControllerHarness();
  c = await h.controller();
  c.start();
});
afterAll(() => h.close());

async function settled(runId: string) {
  return waitFor(
    `run ${runId} to settle`,
    async () => {
      const run = await h.db.db.run.findUniqueOrThrow({ where: { id: runId } });
      return run.status === "succeeded" || run.status === "failed" ? run : null;
    },
    30_000,
  );
}

async function nothingHeld(runId: string) {
  return waitFor(`run ${runId}'s sandboxes to be destroyed`, async () => {
    const leases = await h.db.db.environmentLease.findMany({ where: { runId } });
    return leases.length > 0 && leases.every((l) => l.status === "expired");
  });
}

function submit(taskId: string, extra: { target?: "local" | "remote"; sandboxMode?: "warm" | "per_turn" } = {}) {
  return submitRun(h.db.db, "inst-a", { companyId: "co-1", taskId, agent: "planner", provider: "codex", turns: 2, ...extra }, actor);
}

describe("startup failures (docs/rules.md §2.3)", () => {
  it.each([
    ["authentication"],
    ["permission"],
    ["invalid_request"],
  ] as const)("a remote %s rejection ends at once as native_provider_startup_rejected, and Retry starts exactly one run", async (category) => {
    const run = await submit(`reject-${category}`);
    await h.emu.admin.setFault({ match: { runId: run.id }, fault: { kind: "reject", providerFailure: { kind: "requires_action", category, message: "bwrap: loopback: Failed RTM_NEWADDR" } } });
    const done = await settled(run.id);
    expect(done).toMatchObject({
      status: "failed",
      outcome: "terminal_failure",
      failureCode: "native_provider_startup_rejected",
      owner: "board",
      canRetry: true,
      providerAttempts: 1,
    });
    expect(done.nextAction).toMatch(/Retry/);
    expect(done.failureCode).not.toBe("ambiguous_remote_recovery_evidence");
    await nothingHeld(run.id);
    const proofs = await h.db.db.proof.findMany({ where: { runId: run.id, kind: "startup_failure" } });
    expect(proofs).toHaveLength(1);
    expect(proofs[0]!.verdict).toBe("terminal_failure");

    const [a, b] = await Promise.all([retryRun(h.db.db, run.id, actor), retryRun(h.db.db, run.id, actor)]);
    expect(a.run.id).toBe(b.run.id);
    expect([a.created, b.created].sort()).toEqual([false, true]);
    const successors = await h.db.db.run.findMany({ where: { previousRunId: run.id } });
    expect(successors).toHaveLength(1);
    const next = await settled(successors[0]!.id);
    // The fault matched the old run only: the successor's fresh session succeeds.
    expect(next.status).toBe("succeeded");
  });

  it("on a remote target any definite provider failure is a rejection", async () => {
    const run = await submit("remote-quota");
    await h.emu.admin.setFault({ match: { runId: run.id }, fault: { kind: "reject", providerFailure: { kind: "quota", category: null, message: "quota exceeded" } } });
    const done = await settled(run.id);
    expect(done.failureCode).toBe("native_provider_startup_rejected");
  });

  it("on a local target a transient failure retries the same run, then ends exhausted with Retry", async () => {
    const run = await submit("local-transient", { target: "local" });
    await h.emu.admin.setFault({ match: { runId: run.id }, fault: { kind: "reject", providerFailure: { kind: "transient", category: null, message: "upstream 503" } } });
    const interim = await waitFor("a scheduled retry", async () => {
      const r = await h.db.db.run.findUniqueOrThrow({ where: { id: run.id } });
      return r.outcome === "retryable_failure" ? r : null;
    });
    expect(interim).toMatchObject({ failureCode: "native_session_interrupted", owner: "agent", canRetry: false, status: "queued" });
    const done = await settled(run.id);
    expect(done).toMatchObject({ status: "failed", failureCode: "native_session_retry_exhausted", canRetry: true, providerAttempts: 3 });
    expect(await h.db.db.run.count({ where: { taskId: "local-transient" } })).toBe(1);
    const verdicts = await h.db.db.proof.findMany({ where: { runId: run.id, kind: "startup_failure" }, orderBy: { evaluatedAt: "asc" } });
    expect(verdicts.map((p) => p.verdict)).toEqual(["retryable_failure", "retryable_failure", "terminal_failure"]);
  });

  it("a local permission rejection is definite and ends at once", async () => {
    const run = await submit("local-permission", { target: "local" });
    await h.emu.admin.setFault({ match: { runId: run.id }, fault: { kind: "reject", providerFailure: { kind: "requires_action", category: "permission", message: "denied" } } });
    expect((await settled(run.id)).failureCode).toBe("native_provider_startup_rejected");
  });

  it("a runner whose port is taken retries under runner_ingress_bind_conflict until exhausted", async () => {
    const run = await submit("bind-conflict");
    await h.emu.admin.setFault({ match: { runId: run.id }, fault: { kind: "bind_conflict" } });
    const interim = await waitFor("a bind-conflict retry", async () => {
      const r = await h.db.db.run.findUniqueOrThrow({ where: { id: run.id } });
      return r.failureCode === "runner_ingress_bind_conflict" ? r : null;
    });
    expect(interim.outcome).toBe("retryable_failure");
    // The run says what its proof says (item 10): the bind conflict is in the proof's evidence and verdict.
    const first = await h.db.db.proof.findFirstOrThrow({ where: { runId: run.id, kind: "startup_failure" }, orderBy: [{ evaluatedAt: "asc" }, { id: "asc" }] });
    expect(first).toMatchObject({ verdict: "retryable_failure", code: "runner_ingress_bind_conflict" });
    expect(first.evidence).toMatchObject({ bindConflict: true });
    expect(first.output).toMatchObject({ owner: interim.owner, canRetry: interim.canRetry, nextAction: interim.nextAction });
    const done = await settled(run.id);
    expect(done.failureCode).toBe("native_session_retry_exhausted");
    await nothingHeld(run.id);
  });

  it("a runner that never connects is an interruption, retried and then exhausted", async () => {
    const run = await submit("never-connects", { target: "local" });
    await h.emu.admin.setFault({ match: { runId: run.id }, fault: { kind: "never_connect" } });
    const done = await settled(run.id);
    expect(done.failureCode).toBe("native_session_retry_exhausted");
    const events = await h.db.db.runEvent.findMany({ where: { runId: run.id, type: "startup_failed" } });
    expect(events).toHaveLength(3);
  });
});

describe("Retry (docs/rules.md §2.7)", () => {
  it("is refused, with the reason, on a run that succeeded", async () => {
    const run = await submit("retry-refused");
    await settled(run.id);
    await expect(retryRun(h.db.db, run.id, actor)).rejects.toThrow(/only for a run that ended in a failure/);
    const audit = await h.db.db.auditEntry.findMany({ where: { targetId: run.id, action: "run.retry" } });
    expect(audit.map((a) => a.outcome)).toEqual(["refused"]);
  });

  it("50 concurrent Retry calls on one run make exactly one successor", async () => {
    const run = await submit("retry-storm");
    await h.emu.admin.setFault({ match: { runId: run.id }, fault: { kind: "reject" } });
    await settled(run.id);
    const results = await Promise.all(Array.from({ length: 50 }, () => retryRun(h.db.db, run.id, actor)));
    expect(new Set(results.map((r) => r.run.id)).size).toBe(1);
    expect(results.filter((r) => r.created)).toHaveLength(1);
    expect(await h.db.db.run.count({ where: { previousRunId: run.id } })).toBe(1);
    expect(await h.db.db.auditEntry.count({ where: { targetId: run.id, action: "run.retry", outcome: "ok" } })).toBe(50);
  });
});
