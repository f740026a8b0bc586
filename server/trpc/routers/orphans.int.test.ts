import { TRPCError } from "@trpc/server";
import crypto from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ZodError } from "zod";
import type { ControllerContext } from "../../controller/context";
import { json } from "../../controller/records";
import { startControllerHarness, type ControllerHarness } from "../../test/controller";
import { currentProcessIdentity } from "../../process/identity";
import { buildLabels, creationName } from "../../providers/labels";
import { confirmWord } from "../../shared/confirm";
import { createCaller } from "../root";
import { createTRPCContext } from "../trpc";
import { TEST_ADMIN } from "../../test/users";
import { servicesOf } from "../../services";

/**
 * orphans.list / orphans.reclaim and intents.list against PostgreSQL and the in-process
 * emulator. No controller runs here, so nothing but the procedures under test acts.
 */

let h: ControllerHarness;
let service: ControllerContext;
const caller = () => createCaller(() => createTRPCContext({ user: TEST_ADMIN, headers: new Headers(), db: h.db.db, services: servicesOf(service) }));

async function trpcError(p: Promise<unknown>): Promise<TRPCError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(TRPCError);
  return err as TRPCError;
}

const self = currentProcessIdentity();
const exitedCreator = { bootId: "b-gone", pid: 999_999, startedAt: new Date(Date.now() - 3600_000).toISOString(), pidSpace: self.pidSpace };
const liveCreator = { bootId: self.bootId, pid: self.pid, startedAt: self.startedAt, pidSpace: self.pidSpace };
const HOUR = 3600_000;

/** The planted sandboxes by role, with their provider ids. */
const ids: Record<string, string> = {};
const intents: Record<string, string> = {};
let finishedRunId = "";
let liveRunId = "";

async function plant(key: string, labels: Record<string, string>, extra: { name?: string; createdAt?: Date; cpu?: number } = {}) {
  const s = await h.emu.admin.plant({ name: extra.name ?? `decoy-${key}-${crypto.randomBytes(3).toString("hex")}`, labels, cpu: extra.cpu ?? 1, memory: 2, disk: 10, createdAt: (extra.createdAt ?? new Date()).toISOString() });
  ids[key] = s.id;
  return s;
}

async function intentFor(key: string, companyId: string, creator: unknown, runId = `probe-${key}`) {
  const id = crypto.randomUUID();
  intents[key] = id;
  const name = creationName("rw", id);
  await h.db.db.sandboxCreationIntent.create({
    data: {
      id,
      instanceId: "inst-a",
      companyId,
      runId,
      creationName: name,
      labels: json({ instance: "inst-a", company: companyId, operation: id }),
      creator: json(creator),
      createdAt: new Date(Date.now() - 10 * 60_000),
      settleDeadline: new Date(Date.now() + 60_000),
      nextAttemptAt: new Date(Date.now() + 30 * 60_000),
    },
  });
  return { id, name };
}

beforeAll(async () => {
  h = await startControllerHarness();
  service = { ...h.service(), identity: self };
  const { db } = h.db;
  await db.instance.upsert({ where: { id: "inst-a" }, create: { id: "inst-a", name: "a" }, update: {} });
  const base = { instanceId: "inst-a", agent: "a", provider: "codex", target: "remote" as const, sandboxMode: "warm" as const };
  const finished = await db.run.create({ data: { ...base, companyId: "co-1", taskId: "done", status: "succeeded", finishedAt: new Date(Date.now() - 2 * HOUR) } });
  const live = await db.run.create({ data: { ...base, companyId: "co-1", taskId: "live", status: "running" } });
  await db.run.create({ data: { ...base, companyId: "co-2", taskId: "other-company" } });
  finishedRunId = finished.id;
  liveRunId = live.id;

  // Reclaimable: its run's lease names it and its run finished two hours ago (cost accrues
  // from then, not from creation).
  const finishedBox = await plant("finished", buildLabels({ instanceId: "inst-a", companyId: "co-1", runId: finished.id }), { createdAt: new Date(Date.now() - 5 * HOUR), cpu: 4 });
  await db.environmentLease.create({ data: { runId: finished.id, instanceId: "inst-a", companyId: "co-1", provider: "emulator", providerLeaseId: finishedBox.id, sandboxName: finishedBox.name, acquisitionOutcome: "created", status: "expired", endedAt: new Date(Date.now() - HOUR) } });
  // Reclaimable: an ended lease of this instance names it, labels match.
  const leased = await plant("leased", buildLabels({ instanceId: "inst-a", companyId: "co-1" }), { createdAt: new Date(Date.now() - HOUR) });
  await db.environmentLease.create({ data: { instanceId: "inst-a", companyId: "co-1", provider: "emulator", providerLeaseId: leased.id, sandboxName: leased.name, acquisitionOutcome: "created", status: "expired", endedAt: new Date() } });
  // Unrecorded: our labels, a company of ours, and no intent or lease naming it (§2.9):
  // labels alone prove nothing, so it is never in a batch.
  await plant("bare", buildLabels({ instanceId: "inst-a", companyId: "co-1" }), { createdAt: new Date(Date.now() - HOUR) });
  // Foreign: a company this instance has never seen.
  await plant("foreignCompany", buildLabels({ instanceId: "inst-a", companyId: "co-evil" }), { createdAt: new Date(Date.now() - 10 * HOUR), cpu: 8 });
  // Another instance's sandbox: never listed, never touched.
  await plant("otherInstance", buildLabels({ instanceId: "inst-b", companyId: "co-1" }), { createdAt: new Date(Date.now() - 20 * HOUR), cpu: 8 });
  // No company label: unknown.
  await plant("noCompany", { "runwarden.instance": "inst-a" });
  // Held by an active lease of a live run: not an orphan.
  const held = await plant("held", buildLabels({ instanceId: "inst-a", companyId: "co-1", runId: live.id }));
  await db.environmentLease.create({ data: { runId: live.id, instanceId: "inst-a", companyId: "co-1", provider: "emulator", providerLeaseId: held.id, sandboxName: held.name, acquisitionOutcome: "created", status: "active" } });
  // A pending intent whose creator is this very process (alive): live creator.
  const alive = await intentFor("alive", "co-1", liveCreator);
  await plant("liveCreator", buildLabels({ instanceId: "inst-a", companyId: "co-1", operationId: alive.id }), { name: alive.name });
  // A pending intent whose creator exited: reclaimable, and the reclaim settles the intent.
  const gone = await intentFor("exited", "co-1", exitedCreator, finished.id);
  await plant("exitedCreator", buildLabels({ instanceId: "inst-a", companyId: "co-1", operationId: gone.id }), { name: gone.name });
  // Labels that do not match the intent that names it: foreign.
  const mismatch = await intentFor("mismatch", "co-1", exitedCreator);
  await plant("intentMismatch", buildLabels({ instanceId: "inst-a", companyId: "co-2", operationId: mismatch.id }), { name: mismatch.name });
});
afterAll(() => h.close());

async function existing(): Promise<Set<string>> {
  return new Set((await h.emu.admin.sandboxes()).filter((s) => !/^destroy(ing|ed)$/.test(s.state)).map((s) => s.id));
}

describe("orphans.list", () => {
  it("lists this instance's orphans with verdicts, costliest first, and leaves out held and foreign-instance sandboxes", async () => {
    const list = await caller().orphans.list({});
    const verdictOf = Object.fromEntries(list.items.map((r) => [r.id, r.verdict]));
    expect(verdictOf).toEqual({
      [ids.finished!]: "reclaimable",
      [ids.leased!]: "reclaimable",
      [ids.bare!]: "unrecorded",
      [ids.foreignCompany!]: "foreign",
      [ids.noCompany!]: "unknown",
      [ids.liveCreator!]: "live_creator",
      [ids.exitedCreator!]: "reclaimable",
      [ids.intentMismatch!]: "foreign",
    });
    expect(list.held).toBe(1);
    expect(list.byVerdict).toEqual({ reclaimable: 3, unrecorded: 1, live_creator: 1, foreign: 2, unknown: 1 });
    const costs = list.items.map((r) => r.accruedCost);
    expect(costs).toEqual([...costs].sort((a, b) => b - a));

    const finished = list.items.find((r) => r.id === ids.finished)!;
    expect(finished.orphanSinceRule).toBe("run_finished");
    expect(finished.run).toEqual({ id: finishedRunId, status: "succeeded" });
    // Two hours at its hourly rate, not five (its age).
    expect(finished.accruedCost).toBeCloseTo(finished.hourlyCost * 2, 3);
    expect(list.items.find((r) => r.id === ids.bare)!.orphanSinceRule).toBe("created");
    expect(list.items.find((r) => r.id === ids.bare)!.reason).toMatch(/no creation intent or lease of this instance names it/);
    expect(list.items.find((r) => r.id === ids.liveCreator)!.reason).toMatch(/creator is alive \(self\)/);
    expect(list.items.find((r) => r.id === ids.foreignCompany)!.reason).toMatch(/co-evil has no runs, intents or leases/);
    expect(list.items.find((r) => r.id === ids.intentMismatch)!.reason).toMatch(/do not match the records that name it: .*company_label_matches intent:/);
  });

  it("filters by verdict, company and search", async () => {
    const c = caller();
    expect((await c.orphans.list({ verdict: "foreign" })).items.map((r) => r.id).sort()).toEqual([ids.foreignCompany, ids.intentMismatch].sort());
    expect((await c.orphans.list({ companyId: "co-evil" })).items.map((r) => r.id)).toEqual([ids.foreignCompany]);
    const bad = await trpcError(c.orphans.list({ verdict: "mine" } as never));
    expect(bad.code).toBe("BAD_REQUEST");
    expect((bad.cause as ZodError).issues[0]?.path).toEqual(["verdict"]);
  });

  it("pages on the server: each orphan once, in one costliest-first order, with totals over all", async () => {
    const c = caller();
    const whole = await c.orphans.list({});
    const seen: string[] = [];
    const costs: number[] = [];
    const offsets: number[] = [];
    let cursor: string | undefined;
    for (let pages = 0; pages < 10; pages++) {
      const page = await c.orphans.list({ pageSize: 3, ...(cursor ? { cursor } : {}) });
      expect(page.items.length).toBeLessThanOrEqual(3);
      expect(page.totals.count).toBe(whole.totals.count);
      offsets.push(page.offset);
      seen.push(...page.items.map((r) => r.id));
      costs.push(...page.items.map((r) => r.accruedCost));
      if (!page.nextCursor) break;
      cursor = page.nextCursor;
    }
    expect(offsets).toEqual([0, 3, 6]);
    // Every orphan once, and one order across pages: later pages are judged as of the first
    // page's moment, so costs that grow while paging do not reorder (skip or repeat) rows.
    expect([...seen].sort()).toEqual(whole.items.map((r) => r.id).sort());
    expect(costs).toEqual([...costs].sort((a, b) => b - a));
    const forged = await trpcError(c.orphans.list({ cursor: "bm90IGEgY3Vyc29y.AAAAAAAAAAAAAAAAAAAAAA" }));
    expect(forged.code).toBe("BAD_REQUEST");
  });
});

describe("intents.list", () => {
  it("shows each intent's creator with the engine's live verdict and what the sweep would do", async () => {
    const list = await caller().intents.list({});
    const byId = Object.fromEntries(list.items.map((i) => [i.id, i]));
    expect(byId[intents.alive!]).toMatchObject({ status: "pending", creatorVerdict: { verdict: "alive", reason: "self" }, sweepWould: { verdict: "wait" }, run: null });
    expect(byId[intents.exited!]).toMatchObject({ creatorVerdict: { verdict: "exited", reason: "pid_gone" }, sweepWould: { verdict: "inspect" }, run: { id: finishedRunId, status: "succeeded" } });
    expect(list.byStatus.pending).toBe(3);
    expect(list.instanceId).toBe("inst-a");
  });

  it("filters by status and search, and rejects a bad status naming the field", async () => {
    const c = caller();
    expect((await c.intents.list({ status: "reclaimed" })).items).toEqual([]);
    expect((await c.intents.list({ status: "all", search: intents.alive!.slice(0, 8) })).items.map((i) => i.id)).toEqual([intents.alive]);
    const bad = await trpcError(c.intents.list({ status: "gone" } as never));
    expect(bad.code).toBe("BAD_REQUEST");
    expect((bad.cause as ZodError).issues[0]?.path).toEqual(["status"]);
  });
});

describe("orphans.reclaim", () => {
  it("dry run: says exactly what would be destroyed and refused, and touches nothing", async () => {
    const before = await existing();
    const leasesBefore = await h.db.db.environmentLease.count();
    const all = Object.values(ids);
    const plan = await caller().orphans.reclaim({ dryRun: true, sandboxIds: all });
    const outcome = Object.fromEntries(plan.results.map((r) => [r.sandboxId, r.outcome]));
    expect(outcome).toEqual({
      [ids.finished!]: "would_destroy",
      [ids.leased!]: "would_destroy",
      [ids.bare!]: "refused",
      [ids.exitedCreator!]: "would_destroy",
      [ids.foreignCompany!]: "refused",
      [ids.otherInstance!]: "refused",
      [ids.noCompany!]: "refused",
      [ids.held!]: "refused",
      [ids.liveCreator!]: "refused",
      [ids.intentMismatch!]: "refused",
    });
    expect(plan.results.find((r) => r.sandboxId === ids.otherInstance)!.reason).toMatch(/not among this instance's sandboxes/);
    expect(plan.results.find((r) => r.sandboxId === ids.held)!.reason).toMatch(/not an orphan: held by lease/);
    expect(plan.results.find((r) => r.sandboxId === ids.bare)!.reason).toMatch(/^unrecorded: /);
    expect(plan.confirmWord).toBe(confirmWord(3));
    expect(await existing()).toEqual(before);
    expect(await h.db.db.environmentLease.count()).toBe(leasesBefore);
    expect((await h.db.db.sandboxCreationIntent.findUniqueOrThrow({ where: { id: intents.exited! } })).status).toBe("pending");
    expect(await h.db.db.auditEntry.count({ where: { action: "orphans.reclaim_preview", targetId: plan.planId } })).toBe(1);
  });

  it("real reclaim needs the dry run's planId and the typed confirmation (BAD_REQUEST naming the field)", async () => {
    const c = caller();
    const noConfirm = await trpcError(c.orphans.reclaim({ dryRun: false, sandboxIds: [ids.bare!], planId: crypto.randomUUID() }));
    expect(noConfirm.code).toBe("BAD_REQUEST");
    expect((noConfirm.cause as ZodError).issues[0]?.path).toEqual(["confirm"]);
    expect(noConfirm.message).toContain(confirmWord(1));
    const noPlan = await trpcError(c.orphans.reclaim({ dryRun: false, sandboxIds: [ids.bare!], confirm: confirmWord(1) }));
    expect((noPlan.cause as ZodError).issues[0]?.path).toEqual(["planId"]);
    const empty = await trpcError(c.orphans.reclaim({ dryRun: true, sandboxIds: [] }));
    expect((empty.cause as ZodError).issues[0]?.path).toEqual(["sandboxIds"]);
    const unknownPlan = await trpcError(c.orphans.reclaim({ dryRun: false, sandboxIds: [ids.bare!], planId: crypto.randomUUID(), confirm: confirmWord(1) }));
    expect(unknownPlan.code).toBe("PRECONDITION_FAILED");
    expect(await existing()).toContain(ids.bare);
  });

  it("destroys only what is still reclaimable, reports already-gone and refusals honestly, never touches foreign or other-instance sandboxes", async () => {
    const c = caller();
    const temp = await h.db.db.run.create({ data: { instanceId: "inst-a", companyId: "co-temp", taskId: "temp", agent: "a", provider: "codex", target: "remote", sandboxMode: "warm", status: "succeeded", finishedAt: new Date() } });
    const tempBox = await plant("temp", buildLabels({ instanceId: "inst-a", companyId: "co-temp", runId: temp.id }));
    await h.db.db.environmentLease.create({ data: { runId: temp.id, instanceId: "inst-a", companyId: "co-temp", provider: "emulator", providerLeaseId: tempBox.id, sandboxName: tempBox.name, acquisitionOutcome: "created", status: "expired", endedAt: new Date() } });
    const plan = await c.orphans.reclaim({ dryRun: true, sandboxIds: [ids.finished!, ids.leased!, ids.exitedCreator!, ids.foreignCompany!, ids.temp!] });
    expect(plan.counts.would_destroy).toBe(4);

    // Between the dry run and the real one: one goes away, a live run takes another, and a
    // third loses the records that made its company this instance's own (foreign now).
    await h.db.db.environmentLease.deleteMany({ where: { companyId: "co-temp" } });
    await h.db.db.run.deleteMany({ where: { companyId: "co-temp" } });
    await h.emu.provider().destroy(ids.leased!);
    const finished = (await h.emu.admin.sandboxes()).find((s) => s.id === ids.finished)!;
    await h.db.db.environmentLease.create({ data: { runId: liveRunId, instanceId: "inst-a", companyId: "co-1", provider: "emulator", providerLeaseId: finished.id, sandboxName: finished.name, acquisitionOutcome: "resumed", status: "active" } });

    // The foreign and other-instance sandboxes are asked for too: the plan did not list them.
    const sandboxIds = [ids.finished!, ids.leased!, ids.exitedCreator!, ids.temp!, ids.foreignCompany!, ids.otherInstance!];
    const done = await c.orphans.reclaim({ dryRun: false, planId: plan.planId, sandboxIds, confirm: confirmWord(sandboxIds.length) });
    const byId = Object.fromEntries(done.results.map((r) => [r.sandboxId, r]));
    expect(byId[ids.exitedCreator!]).toMatchObject({ outcome: "destroyed" });
    expect(byId[ids.leased!]).toMatchObject({ outcome: "already_gone" });
    expect(byId[ids.finished!]).toMatchObject({ outcome: "refused" });
    expect(byId[ids.finished!]!.reason).toMatch(/no longer an orphan/);
    expect(byId[ids.temp!]).toMatchObject({ outcome: "refused", verdict: "foreign" });
    expect(byId[ids.temp!]!.reason).toMatch(/co-temp has no runs, intents or leases/);
    expect(byId[ids.foreignCompany!]).toMatchObject({ outcome: "refused", reason: "the dry run did not list it for destruction" });
    expect(byId[ids.otherInstance!]).toMatchObject({ outcome: "refused" });

    const left = await existing();
    expect(left).not.toContain(ids.exitedCreator);
    for (const key of ["finished", "bare", "temp", "foreignCompany", "otherInstance", "liveCreator", "held", "noCompany", "intentMismatch"]) expect(left).toContain(ids[key]);

    // Destruction went through a fenced, receipted lease; the intent is settled.
    const lease = await h.db.db.environmentLease.findUniqueOrThrow({ where: { id: byId[ids.exitedCreator!]!.leaseId! } });
    expect(lease).toMatchObject({ status: "expired", cleanupStatus: "destroyed", intentId: intents.exited, runId: finishedRunId, fencedUntil: null });
    expect(lease.terminationReceipt).toMatchObject({ outcome: "destroyed", sandboxId: ids.exitedCreator });
    expect((await h.db.db.sandboxCreationIntent.findUniqueOrThrow({ where: { id: intents.exited! } })).status).toBe("reclaimed");
    const audit = await h.db.db.auditEntry.findFirstOrThrow({ where: { action: "orphans.reclaim", targetId: plan.planId } });
    expect(audit).toMatchObject({ actor: "admin@test.local", outcome: "ok" });
    // The destroy was proven: a sandbox_ownership proof of the teardown's lease, owned.
    const proof = await h.db.db.proof.findFirstOrThrow({ where: { kind: "sandbox_ownership", leaseId: lease.id } });
    expect(proof).toMatchObject({ verdict: "owned", reason: "record_matches", sandboxId: ids.exitedCreator });
  });
});

describe("orphans.destroyUnrecorded (§2.9)", () => {
  it("destroys one unrecorded sandbox only when its exact name is typed, stores the ownership proof and audits it as unrecorded", async () => {
    const c = caller();
    const bare = (await h.emu.admin.sandboxes()).find((s) => s.id === ids.bare)!;

    const wrongName = await trpcError(c.orphans.destroyUnrecorded({ sandboxId: ids.bare!, confirmName: `${bare.name}-x` }));
    expect(wrongName.code).toBe("NOT_FOUND");
    const otherName = await trpcError(c.orphans.destroyUnrecorded({ sandboxId: ids.bare!, confirmName: (await h.emu.admin.sandboxes()).find((s) => s.id === ids.noCompany)!.name }));
    expect(otherName.code).toBe("PRECONDITION_FAILED");
    expect(otherName.message).toMatch(/type the exact name/);
    // A recorded sandbox is reclaimed with a dry run, never through this door.
    const recorded = (await h.emu.admin.sandboxes()).find((s) => s.id === ids.finished)!;
    await h.db.db.environmentLease.updateMany({ where: { providerLeaseId: recorded.id, runId: liveRunId }, data: { status: "expired", endedAt: new Date() } });
    const notUnrecorded = await trpcError(c.orphans.destroyUnrecorded({ sandboxId: recorded.id, confirmName: recorded.name }));
    expect(notUnrecorded.code).toBe("PRECONDITION_FAILED");
    expect(notUnrecorded.message).toMatch(/not unrecorded/);
    expect(await existing()).toContain(ids.bare);
    expect(await existing()).toContain(ids.finished);

    const done = await c.orphans.destroyUnrecorded({ sandboxId: ids.bare!, confirmName: bare.name });
    expect(done).toMatchObject({ outcome: "destroyed", name: bare.name });
    expect(await existing()).not.toContain(ids.bare);
    const proof = await h.db.db.proof.findUniqueOrThrow({ where: { id: done.proofId } });
    expect(proof).toMatchObject({ kind: "sandbox_ownership", verdict: "unrecorded", reason: "no_record", sandboxId: ids.bare, leaseId: done.leaseId });
    const entries = await h.db.db.auditEntry.findMany({ where: { action: "orphans.destroy_unrecorded", targetId: ids.bare }, orderBy: { id: "asc" } });
    expect(entries.map((e) => e.outcome)).toEqual(["refused", "refused", "ok"]);
    for (const e of entries) expect(e.detail).toMatchObject({ ownership: "unrecorded" });
  });
});
