import crypto from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Actor } from "../audit/write";
import { buildLabels } from "../providers/labels";
import { servicesOf } from "../services";
import { startControllerHarness, waitFor, type ControllerHarness } from "../test/controller";
import { TEST_ADMIN } from "../test/users";
import { createCaller } from "../trpc/root";
import { createTRPCContext } from "../trpc/trpc";
import { confirmBulkPlan } from "./bulk-confirm";
import { previewBulkPlan } from "./bulk-preview";

/**
 * Bulk Cancel and the cancelled runs' sandboxes (docs/rules.md §2.11), against the emulator:
 * the run is cancelled and its item recorded in one transaction, and the sandbox's teardown
 * comes after, outside any transaction, bounded, its result added to the item when it ends. A
 * provider that hangs (the emulator's `hang` fault: every call about the sandbox held
 * unanswered) delays only the teardown's line, never the record of what was done.
 */

let h: ControllerHarness;
beforeAll(async () => {
  h = await startControllerHarness();
  await h.db.db.instance.upsert({ where: { id: "inst-a" }, create: { id: "inst-a", name: "a" }, update: {} });
});
afterAll(() => h.close());

const ALL = { all: true } as const;
const OPERATOR: Actor = { id: "operator@test.local", role: "operator" };

/** A running run of `companyId` holding an active lease on a real sandbox in the emulator. */
async function runWithSandbox(companyId: string) {
  const { db } = h.db;
  const run = await db.run.create({ data: { instanceId: "inst-a", companyId, taskId: `${companyId}-task`, agent: "a", provider: "codex", target: "remote", sandboxMode: "warm", status: "running" } });
  const box = await h.emu.admin.plant({ name: `rw-${companyId}-${crypto.randomBytes(3).toString("hex")}`, labels: buildLabels({ instanceId: "inst-a", companyId, runId: run.id }), cpu: 1, memory: 2, disk: 10 });
  const lease = await db.environmentLease.create({ data: { runId: run.id, instanceId: "inst-a", companyId, provider: "emulator", providerLeaseId: box.id, sandboxName: box.name, acquisitionOutcome: "created", status: "active" } });
  return { run, box, lease };
}

describe("bulk Cancel and the provider", () => {
  it("a provider that hangs past the bound: the run is cancelled, the item says so (teardown pending), no error, 1 cancelled in the counts and the audit; a repeat does not call it refused", async () => {
    const { db } = h.db;
    const { run, box, lease } = await runWithSandbox("co-hang");
    await h.emu.admin.setFault({ match: { name: box.name }, fault: { kind: "hang" } });
    // The provider's own bound on a held call (3 s); the confirmation's bound on the teardown is shorter.
    const provider = h.emu.provider({ instanceId: "inst-a", timeoutMs: 3_000 });
    const services = servicesOf({ ...h.service(), provider, runner: h.emu.runner(provider, 3_000) });

    const plan = await previewBulkPlan(db, "inst-a", ALL, OPERATOR, { kind: "cancel", filter: { companyId: "co-hang" }, reason: "incident 7" });
    expect(plan).toMatchObject({ admitted: 1, confirmWord: "cancel 1" });
    const confirm = () =>
      confirmBulkPlan(db, "inst-a", ALL, OPERATOR, { planId: plan.id, confirm: "cancel 1" }, { cancel: (tx, runId, options) => services.cancelRunIn(tx, ALL, OPERATOR, runId, options), teardownWaitMs: 500 });

    const started = performance.now();
    const first = await confirm();
    const ms = performance.now() - started;
    console.log(`bulk cancel with a hanging provider answered in ${ms.toFixed(0)} ms`);
    expect(ms).toBeLessThan(3_000);
    expect(first.plan.counts).toMatchObject({ cancelled: 1, refused: 0, failed: 0, pending: 0 });
    expect(first.plan.items[0]).toMatchObject({ runId: run.id, result: "cancelled", teardown: "pending" });
    expect(first.plan.finishedAt).not.toBeNull();
    expect(await db.run.findUniqueOrThrow({ where: { id: run.id } })).toMatchObject({ status: "cancelled", cancelledBy: OPERATOR.id, cancelReason: "incident 7" });

    const entries = await db.auditEntry.findMany({ where: { action: "run.bulk_cancel", targetId: plan.id } });
    expect(entries.map((e) => e.outcome)).toEqual(["ok"]);
    const detail = entries[0]!.detail as { counts: { cancelled: number }; runs: Array<{ runId: string; result: string; teardown?: string }> };
    expect(detail.counts.cancelled).toBe(1);
    expect(detail.runs).toEqual([expect.objectContaining({ runId: run.id, result: "cancelled", teardown: "pending" })]);

    const again = await confirm();
    expect(again.plan.items[0]).toMatchObject({ runId: run.id, result: "cancelled" });
    expect(again.plan.counts).toMatchObject({ cancelled: 1, refused: 0 });
    // One Cancel of the run, none refused; the plan's one entry, and the repeat's.
    expect((await db.auditEntry.findMany({ where: { action: "run.cancel", targetId: run.id } })).map((e) => e.outcome)).toEqual(["ok"]);
    expect(await db.auditEntry.count({ where: { action: "run.bulk_cancel", targetId: plan.id } })).toBe(1);
    expect(await db.auditEntry.count({ where: { action: "run.bulk_confirm_repeat", targetId: plan.id } })).toBe(1);

    // The teardown goes on after the answer: the provider gives up on the held calls, and the item says so.
    const item = await waitFor(
      "the teardown's result on the item",
      async () => {
        const row = await db.bulkPlanItem.findUniqueOrThrow({ where: { planId_runId: { planId: plan.id, runId: run.id } } });
        return row.teardown !== "pending" && row;
      },
      20_000,
    );
    expect(item.teardown).toMatch(new RegExp(`^failed: sandbox lease ${lease.id}: pending_cleanup: the teardown failed`));
    // The sweep owns what failed (§2.6); the sandbox is still there.
    expect(await db.environmentLease.findUniqueOrThrow({ where: { id: lease.id } })).toMatchObject({ status: "pending_cleanup" });
    await h.emu.admin.clearFaults();
  }, 60_000);

  it("through plans.confirm with a healthy provider: the answer says each cancelled run's sandbox is torn down (done)", async () => {
    const { db } = h.db;
    const { run, box, lease } = await runWithSandbox("co-fine");
    const caller = createCaller(() => createTRPCContext({ user: TEST_ADMIN, headers: new Headers(), db, services: servicesOf(h.service()) }));
    const plan = await caller.plans.preview({ kind: "cancel", filter: { companyId: "co-fine" } });
    const done = await caller.plans.confirm({ planId: plan.id, confirm: plan.confirmWord });
    expect(done.counts).toMatchObject({ cancelled: 1, pending: 0 });
    expect(done.items[0]).toMatchObject({ runId: run.id, result: "cancelled", teardown: "done" });
    expect(await db.environmentLease.findUniqueOrThrow({ where: { id: lease.id } })).toMatchObject({ status: "expired" });
    await waitFor("the sandbox destroyed", async () => (await h.emu.admin.sandboxes({ includeDestroyed: true })).some((b) => b.id === box.id && b.state === "destroyed"));
  }, 30_000);
});
