import crypto from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildLabels } from "../providers/labels";
import { servicesOf } from "../services";
import { startControllerHarness, waitFor, type ControllerHarness } from "../test/controller";
import { TEST_ADMIN } from "../test/users";
import { createCaller } from "../trpc/root";
import { createTRPCContext } from "../trpc/trpc";

/**
 * Bulk Retry hands each old run's sandbox to cleanup as a single Retry does: failed runs whose
 * leases are still active, their sandboxes real ones in the emulator; a plan; 5 concurrent
 * confirmations — each lease handed over once, by the confirmation that retried its run, and
 * each sandbox destroyed after its ownership proof.
 */

let h: ControllerHarness;
beforeAll(async () => {
  h = await startControllerHarness();
});
afterAll(() => h.close());

const caller = () => createCaller(() => createTRPCContext({ user: TEST_ADMIN, headers: new Headers(), db: h.db.db, services: servicesOf(h.service()) }));

describe("bulk Retry and the old runs' sandboxes", () => {
  it("each old run's lease is torn down once, by the confirmation that retried it", async () => {
    const { db } = h.db;
    await db.instance.upsert({ where: { id: "inst-a" }, create: { id: "inst-a", name: "a" }, update: {} });
    const base = { instanceId: "inst-a", companyId: "co-leases", agent: "a", provider: "codex", target: "remote" as const, sandboxMode: "warm" as const };
    const runIds: string[] = [];
    const leaseIds: string[] = [];
    const sandboxIds: string[] = [];
    for (let i = 0; i < 3; i++) {
      const run = await db.run.create({ data: { ...base, taskId: `bulk-leases-${i}`, status: "failed", outcome: "terminal_failure", failureCode: "native_provider_startup_rejected", canRetry: true, finishedAt: new Date() } });
      const box = await h.emu.admin.plant({ name: `rw-bulk-leases-${crypto.randomBytes(3).toString("hex")}`, labels: buildLabels({ instanceId: "inst-a", companyId: "co-leases", runId: run.id }), cpu: 1, memory: 2, disk: 10 });
      const lease = await db.environmentLease.create({ data: { runId: run.id, instanceId: "inst-a", companyId: "co-leases", provider: "emulator", providerLeaseId: box.id, sandboxName: box.name, acquisitionOutcome: "created", status: "active" } });
      runIds.push(run.id);
      leaseIds.push(lease.id);
      sandboxIds.push(box.id);
    }

    const plan = await caller().plans.preview({ kind: "retry", filter: { companyId: "co-leases" } });
    expect(plan.admitted).toBe(3);
    const answers = await Promise.all(Array.from({ length: 5 }, () => caller().plans.confirm({ planId: plan.id, confirm: "retry 3" })));
    for (const a of answers) expect(a.counts).toMatchObject({ retried: 3, pending: 0 });
    const handed = answers.flatMap((a) => a.cleanup);
    expect(handed.map((x) => x.leaseId).sort()).toEqual([...leaseIds].sort());
    expect(handed.every((x) => x.outcome === "destroyed")).toBe(true);

    const after = await db.environmentLease.findMany({ where: { id: { in: leaseIds } } });
    expect(after.every((l) => l.status !== "active" && l.status !== "pending_cleanup")).toBe(true);
    // The provider finishes a destroy on its own time (destroying → destroyed).
    await waitFor("the sandboxes destroyed", async () => (await h.emu.admin.sandboxes({ includeDestroyed: true })).filter((b) => sandboxIds.includes(b.id) && b.state === "destroyed").length === 3);
    expect(await db.run.count({ where: { previousRunId: { in: runIds } } })).toBe(3);
  });
});
