import crypto from "node:crypto";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { Identity } from "../engine";
import { currentProcessIdentity } from "../process/identity";
import { exitedProcessIdentity } from "../process/exited";
import { buildLabels, creationName } from "../providers/labels";
import { evidenceIdentity } from "./context";
import type { Controller } from "./controller";
import { json } from "./records";
import { reclaimBatching } from "./sweeps";
import { startControllerHarness, waitFor, type ControllerHarness } from "../test/controller";
import { recordPendingCleanupStates } from "../test/db";

/** The sweeps' counter-cases (docs/rules.md §2.5, §2.6), with crafted rows and planted sandboxes. */

let h: ControllerHarness;
let c: Controller;
let dead: Identity;


const self = () => evidenceIdentity(currentProcessIdentity());
const foreign = (): Identity => ({ ...self(), bootId: crypto.randomUUID(), pidSpace: "ps-another-host" });

interface IntentSeed {
  creator: Identity | null;
  /** Labels the planted sandbox carries (null: no sandbox). */
  sandboxLabels?: { instance: string; company: string } | null;
  nextAttemptInMs?: number;
  settleInMs?: number;
  /** The run the intent was for (default: a probe's name, no run). */
  runId?: string;
}

async function seedIntent(seed: IntentSeed, id: string = crypto.randomUUID()) {
  const name = creationName("rw", id);
  const now = Date.now();
  await h.db.db.sandboxCreationIntent.create({
    data: {
      id,
      instanceId: "inst-a",
      companyId: "co-1",
      runId: seed.runId ?? `probe-${id}`,
      creationName: name,
      labels: json({ instance: "inst-a", company: "co-1", operation: id }),
      creator: seed.creator ? json(seed.creator) : undefined,
      creatorBootId: seed.creator?.bootId ?? null,
      settleDeadline: new Date(now + (seed.settleInMs ?? 60_000)),
      nextAttemptAt: new Date(now + (seed.nextAttemptInMs ?? 30 * 60_000)),
    },
  });
  let sandboxId: string | null = null;
  if (seed.sandboxLabels !== null) {
    const l = seed.sandboxLabels ?? { instance: "inst-a", company: "co-1" };
    const planted = await h.emu.admin.plant({ name, labels: buildLabels({ instanceId: l.instance, companyId: l.company, operationId: id }) });
    sandboxId = planted.id;
  }
  return { id, name, sandboxId };
}

/** Deleted: `destroying` (Daytona's transition, in the emulator too) or already `destroyed`. */
const DELETED = /^destroy(ing|ed)$/;

async function sandboxState(id: string) {
  return (await h.emu.admin.sandboxes({ includeDestroyed: true })).find((s) => s.id === id)?.state;
}

async function intentStatus(id: string) {
  return (await h.db.db.sandboxCreationIntent.findUniqueOrThrow({ where: { id } })).status;
}

beforeAll(async () => {
  h = await startControllerHarness();
  c = await h.controller({ pageSize: 5 });
  dead = evidenceIdentity(await exitedProcessIdentity());
});
afterAll(() => h.close());

describe("creation-intent sweep", () => {
  it("reclaims an abandoned intent's sandbox by exact name and labels, and destroys it", async () => {
    const seed = await seedIntent({ creator: dead });
    const byName = vi.spyOn(c.ctx.provider, "getByName");
    const byId = vi.spyOn(c.ctx.provider, "getById");
    const [summary] = await c.sweep("test");
    // The teardown acts on the sandbox the reclaim found: one lookup by name, none by id after it.
    expect(byName.mock.calls.filter(([name]) => name === seed.name)).toHaveLength(1);
    expect(byId.mock.calls.filter(([id]) => id === seed.sandboxId)).toHaveLength(0);
    byName.mockRestore();
    byId.mockRestore();
    expect(summary!.reclaimed).toBeGreaterThanOrEqual(1);
    expect(await intentStatus(seed.id)).toBe("reclaimed");
    expect(await sandboxState(seed.sandboxId!)).toMatch(DELETED);
    const lease = await h.db.db.environmentLease.findUniqueOrThrow({ where: { intentId: seed.id } });
    expect(lease).toMatchObject({ status: "expired", runId: null, acquisitionOutcome: "created" });
    // What the reclaim itself wrote (one statement: docs/decisions/0003-cost-at-scale.md): the lease as claimed, the intent, both proofs.
    expect(lease).toMatchObject({ instanceId: "inst-a", companyId: "co-1", providerLeaseId: seed.sandboxId, sandboxName: seed.name, cleanupStatus: "destroyed", cleanupAttempts: 0, fencedUntil: null });
    expect(lease.claimRecord).toEqual({ attemptId: lease.claimAttemptId, claimer: expect.objectContaining({ bootId: c.ctx.identity.bootId }), claimedAt: expect.any(String) });
    const intent = await h.db.db.sandboxCreationIntent.findUniqueOrThrow({ where: { id: seed.id } });
    expect(intent).toMatchObject({ attempts: 1, resolvedAt: expect.any(Date), lastInspectedAt: intent.resolvedAt });
    expect(intent.lastInspection).toEqual({ found: true, sandbox: { name: seed.name, labels: expect.objectContaining({ instance: "inst-a", company: "co-1", operation: seed.id }) }, at: intent.resolvedAt!.toISOString(), sandboxId: seed.sandboxId });
    expect(intent.nextAttemptAt.getTime()).toBeLessThanOrEqual(intent.resolvedAt!.getTime()); // made due by its exited creator
    const proofs = await h.db.db.proof.findMany({ where: { intentId: seed.id, kind: "creation_intent" }, orderBy: { evaluatedAt: "asc" } });
    expect(proofs.map((p) => [p.verdict, p.sandboxId, p.evaluatedBy])).toEqual([
      ["inspect", null, c.ctx.identity.bootId],
      ["reclaim", seed.sandboxId, c.ctx.identity.bootId],
    ]);
    expect(proofs[1]!.evidence).toMatchObject({ kind: "creation_intent", inspection: { found: true } });
    expect(proofs[1]!.output).toMatchObject({ kind: "creation_intent", verdict: "reclaim" });
    // The ownership proof the destroy acted through (§2.9), stored with the lease before the destroy.
    const owned = await h.db.db.proof.findMany({ where: { leaseId: lease.id, kind: "sandbox_ownership" } });
    expect(owned.map((p) => [p.verdict, p.sandboxId])).toEqual([["owned", seed.sandboxId]]);
    expect(owned[0]!.evidence).toMatchObject({
      sandbox: { id: seed.sandboxId, name: seed.name },
      actingRecord: { type: "lease", id: lease.id },
      records: expect.arrayContaining([expect.objectContaining({ type: "intent", id: seed.id }), expect.objectContaining({ type: "lease", id: lease.id, providerLeaseId: seed.sandboxId })]),
    });
    expect(owned[0]!.evaluatedAt.getTime()).toBeLessThanOrEqual(lease.endedAt!.getTime());
  });

  it("records one sandbox_destroyed on the run of a reclaimed sandbox, with the lease's receipt, beside a reclaim of no run in the same batch", async () => {
    const { db } = h.db;
    await db.instance.upsert({ where: { id: "inst-a" }, create: { id: "inst-a", name: "a" }, update: {} });
    const run = await db.run.create({
      data: { instanceId: "inst-a", companyId: "co-1", taskId: "reclaimed-run", agent: "a", provider: "codex", target: "remote", sandboxMode: "warm", status: "failed" },
    });
    const [ofRun, ofNone] = await Promise.all([seedIntent({ creator: dead, runId: run.id }), seedIntent({ creator: dead })]);
    await c.sweep("test");
    const lease = await db.environmentLease.findUniqueOrThrow({ where: { intentId: ofRun!.id } });
    expect(lease).toMatchObject({ status: "expired", runId: run.id, cleanupStatus: "destroyed", fencedUntil: null });
    expect(lease.terminationReceipt).toMatchObject({ outcome: "destroyed", sandboxId: ofRun!.sandboxId, attemptId: lease.claimAttemptId, by: c.ctx.identity.bootId });
    const events = await db.runEvent.findMany({ where: { runId: run.id, type: "sandbox_destroyed" } });
    expect(events.map((e) => e.data)).toEqual([{ leaseId: lease.id, ...(lease.terminationReceipt as object) }]);
    expect(await db.environmentLease.findUniqueOrThrow({ where: { intentId: ofNone!.id } })).toMatchObject({ status: "expired", runId: null, cleanupStatus: "destroyed" });
    expect(await sandboxState(ofRun!.sandboxId!)).toMatch(DELETED);
    expect(await sandboxState(ofNone!.sandboxId!)).toMatch(DELETED);
  });

  it("refuses the teardown of a reclaimed sandbox that another record of this instance names with other labels", async () => {
    const seed = await seedIntent({ creator: dead });
    // An older lease of this instance by the same exact name, for another company: the sandbox is not provably the intent's alone.
    await h.db.db.environmentLease.create({
      data: { instanceId: "inst-a", companyId: "co-2", provider: "emulator", sandboxName: seed.name, acquisitionOutcome: "created", status: "expired" },
    });
    await c.sweep("test");
    expect(await intentStatus(seed.id)).toBe("reclaimed");
    expect(await sandboxState(seed.sandboxId!)).toBe("started");
    const lease = await h.db.db.environmentLease.findUniqueOrThrow({ where: { intentId: seed.id } });
    expect(lease).toMatchObject({ status: "failed", cleanupStatus: "ownership_mismatch", lastCleanupError: expect.stringContaining("labels_mismatch") });
    const refused = await h.db.db.proof.findMany({ where: { leaseId: lease.id, kind: "sandbox_ownership" } });
    expect(refused.map((p) => [p.verdict, p.reason])).toEqual([["refused", "labels_mismatch"]]);
  });

  it("leaves a live creator's, another host's and an unidentified creator's sandboxes alone", async () => {
    const live = await seedIntent({ creator: self() });
    const otherHost = await seedIntent({ creator: foreign() });
    const unidentified = await seedIntent({ creator: null });
    await c.sweep("test");
    for (const s of [live, otherHost, unidentified]) {
      expect(await intentStatus(s.id)).toBe("pending");
      expect(await sandboxState(s.sandboxId!)).not.toMatch(DELETED);
      expect(await h.db.db.proof.count({ where: { intentId: s.id } })).toBe(0);
    }
  });

  it("refuses to destroy a sandbox whose labels name another company or instance", async () => {
    const otherCompany = await seedIntent({ creator: dead, sandboxLabels: { instance: "inst-a", company: "co-2" } });
    const otherInstance = await seedIntent({ creator: dead, sandboxLabels: { instance: "inst-b", company: "co-1" } });
    await c.sweep("test");
    for (const s of [otherCompany, otherInstance]) {
      expect(await intentStatus(s.id)).toBe("manual_reconciliation");
      expect(await sandboxState(s.sandboxId!)).toBe("started");
    }
  });

  it("judges each row of one batch on its own: a reclaim, a wait for the settle deadline, an absent sandbox and a foreign one", async () => {
    // Adjacent in id order, so one batch (one transaction, one write for its reclaims) holds them all.
    expect(reclaimBatching(c.ctx.config.sweepLanes).batchSize).toBeGreaterThanOrEqual(4);
    const ours = await seedIntent({ creator: dead }, "0009-batch-a-ours");
    const early = await seedIntent({ creator: dead, sandboxLabels: null, settleInMs: 60_000 }, "0009-batch-b-early");
    const absent = await seedIntent({ creator: dead, sandboxLabels: null, settleInMs: -1 }, "0009-batch-c-absent");
    const foreignCompany = await seedIntent({ creator: dead, sandboxLabels: { instance: "inst-a", company: "co-2" } }, "0009-batch-d-foreign");
    await c.sweep("test");
    expect(await intentStatus(ours.id)).toBe("reclaimed");
    expect(await sandboxState(ours.sandboxId!)).toMatch(DELETED);
    expect(await intentStatus(early.id)).toBe("pending");
    expect(await intentStatus(absent.id)).toBe("resolved_absent");
    expect(await intentStatus(foreignCompany.id)).toBe("manual_reconciliation");
    expect(await sandboxState(foreignCompany.sandboxId!)).toBe("started");
    const verdicts = async (id: string) => (await h.db.db.proof.findMany({ where: { intentId: id, kind: "creation_intent" }, orderBy: { evaluatedAt: "asc" } })).map((p) => p.verdict);
    // Each: the proof that its creator exited made it due, then the inspection's.
    expect(await verdicts(ours.id)).toEqual(["inspect", "reclaim"]);
    expect(await verdicts(early.id)).toEqual(["inspect", "stay_pending"]);
    expect(await verdicts(absent.id)).toEqual(["inspect", "resolve_absent"]);
    expect(await verdicts(foreignCompany.id)).toEqual(["inspect", "manual_reconciliation"]);
    // Only the reclaim has a lease, with its ownership proof.
    const lease = await h.db.db.environmentLease.findFirstOrThrow({ where: { intentId: ours.id } });
    expect(lease).toMatchObject({ status: "expired", cleanupStatus: "destroyed" });
    expect(await h.db.db.proof.findFirst({ where: { kind: "sandbox_ownership", leaseId: lease.id } })).toMatchObject({ verdict: "owned", sandboxId: ours.sandboxId });
    expect(await h.db.db.environmentLease.count({ where: { intentId: { in: [early.id, absent.id, foreignCompany.id] } } })).toBe(0);
  });

  it("never lists or touches another instance's sandboxes that have no intent here", async () => {
    const decoy = await h.emu.admin.plant({ name: "rw-create-decoy-other-instance", labels: buildLabels({ instanceId: "inst-b", companyId: "co-1", operationId: "decoy" }) });
    await c.sweep("test");
    expect(await sandboxState(decoy.id)).toBe("started");
  });

  it("keeps an early not-found pending, and still reclaims the sandbox that materialises late", async () => {
    const id = crypto.randomUUID();
    const name = creationName("rw", id);
    await h.emu.admin.setFault({ match: { name }, fault: { kind: "late", delayMs: 1500 } });
    const provider = h.emu.provider({ instanceId: "inst-a" });
    // The creator asks, gives up at once (it "died"), and the provider materialises it later.
    await provider.create({ name, labels: buildLabels({ instanceId: "inst-a", companyId: "co-1", operationId: id }), signal: AbortSignal.timeout(100) }).catch(() => null);
    await seedIntent({ creator: dead, sandboxLabels: null, settleInMs: 10_000 }, id);

    await c.sweep("test");
    expect(await intentStatus(id)).toBe("pending");
    const first = await h.db.db.proof.findFirstOrThrow({ where: { intentId: id, kind: "creation_intent", verdict: "stay_pending" } });
    expect(first.reason === null || typeof first.reason === "string").toBe(true);

    await waitFor("the late sandbox and the intent's next attempt", async () => {
      const intent = await h.db.db.sandboxCreationIntent.findUniqueOrThrow({ where: { id } });
      const found = await provider.getByName(name);
      return found && intent.nextAttemptAt.getTime() <= Date.now() ? true : null;
    });
    await c.sweep("test");
    expect(await intentStatus(id)).toBe("reclaimed");
    // A deleted sandbox is renamed DESTROYED_<name>_<ms> at once (Daytona).
    const sandbox = (await h.emu.admin.sandboxes({ includeDestroyed: true })).find((s) => s.name.startsWith(`DESTROYED_${name}_`));
    expect(sandbox?.state).toMatch(DELETED);
  });

  it("resolves an intent as absent when nothing appears by the settle deadline", async () => {
    const seed = await seedIntent({ creator: dead, sandboxLabels: null, settleInMs: -1 });
    await c.sweep("test");
    expect(await intentStatus(seed.id)).toBe("resolved_absent");
  });

  it("for 30 minutes after resolving absent, looks the exact name up again and reclaims a late materialisation with a proof", async () => {
    const seed = await seedIntent({ creator: dead, sandboxLabels: null, settleInMs: -1 });
    const mismatched = await seedIntent({ creator: dead, sandboxLabels: null, settleInMs: -1 });
    const old = await seedIntent({ creator: dead, sandboxLabels: null, settleInMs: -1 });
    await c.sweep("test");
    for (const s of [seed, mismatched, old]) expect(await intentStatus(s.id)).toBe("resolved_absent");
    // Resolved 31 minutes ago: past the window, never looked up again.
    await h.db.db.sandboxCreationIntent.update({ where: { id: old.id }, data: { resolvedAt: new Date(Date.now() - 31 * 60_000) } });

    // The provider finishes the aborted creates after all.
    const late = await h.emu.admin.plant({ name: seed.name, labels: buildLabels({ instanceId: "inst-a", companyId: "co-1", operationId: seed.id }) });
    const wrong = await h.emu.admin.plant({ name: mismatched.name, labels: buildLabels({ instanceId: "inst-a", companyId: "co-2", operationId: mismatched.id }) });
    const tooOld = await h.emu.admin.plant({ name: old.name, labels: buildLabels({ instanceId: "inst-a", companyId: "co-1", operationId: old.id }) });
    await c.sweep("test");

    expect(await intentStatus(seed.id)).toBe("reclaimed");
    expect(await sandboxState(late.id)).toMatch(DELETED);
    const proof = await h.db.db.proof.findFirstOrThrow({ where: { intentId: seed.id, kind: "sandbox_ownership" } });
    expect(proof).toMatchObject({ verdict: "owned", sandboxId: late.id });
    // One lease for it, written by the reclaim, claimed and torn down with its receipt.
    const lease = await h.db.db.environmentLease.findFirstOrThrow({ where: { sandboxName: seed.name } });
    expect(lease).toMatchObject({ intentId: seed.id, providerLeaseId: late.id, status: "expired", cleanupStatus: "destroyed" });
    expect(lease.terminationReceipt).toMatchObject({ sandboxId: late.id, outcome: "destroyed" });
    // Labels that do not match: nothing destroyed, an operator reconciles it.
    expect(await intentStatus(mismatched.id)).toBe("manual_reconciliation");
    expect(await sandboxState(wrong.id)).not.toMatch(DELETED);
    expect(await h.db.db.proof.count({ where: { intentId: mismatched.id, kind: "sandbox_ownership", verdict: "refused" } })).toBe(1);
    expect(await intentStatus(old.id)).toBe("resolved_absent");
    expect(await sandboxState(tooOld.id)).not.toMatch(DELETED);
  });

  it("looks up again an intent resolved absent just inside the 30 minutes on the database's clock, and not one just past them", async () => {
    const inside = await seedIntent({ creator: dead, sandboxLabels: null, settleInMs: -1 });
    const past = await seedIntent({ creator: dead, sandboxLabels: null, settleInMs: -1 });
    await c.sweep("test");
    for (const s of [inside, past]) expect(await intentStatus(s.id)).toBe("resolved_absent");
    // `resolved_at` is written on the database's clock; the window is read on it too.
    await h.db.db.$executeRaw`UPDATE sandbox_creation_intents SET resolved_at = now() - interval '29 minutes 50 seconds' WHERE operation_id = ${inside.id}`;
    await h.db.db.$executeRaw`UPDATE sandbox_creation_intents SET resolved_at = now() - interval '30 minutes 10 seconds' WHERE operation_id = ${past.id}`;
    const lateInside = await h.emu.admin.plant({ name: inside.name, labels: buildLabels({ instanceId: "inst-a", companyId: "co-1", operationId: inside.id }) });
    const latePast = await h.emu.admin.plant({ name: past.name, labels: buildLabels({ instanceId: "inst-a", companyId: "co-1", operationId: past.id }) });
    await c.sweep("test");

    expect(await intentStatus(inside.id)).toBe("reclaimed");
    expect(await sandboxState(lateInside.id)).toMatch(DELETED);
    expect(await intentStatus(past.id)).toBe("resolved_absent");
    expect(await sandboxState(latePast.id)).not.toMatch(DELETED);
  });

  it("pages past more unprovable intents than one page to reach an abandoned one", async () => {
    // Ids sort so that the abandoned intent comes after three full pages of live ones.
    for (let i = 0; i < 15; i++) await seedIntent({ creator: i % 2 ? self() : foreign() }, `0000-live-${String(i).padStart(2, "0")}`);
    const abandoned = await seedIntent({ creator: dead }, "zzzz-abandoned");
    const [summary] = await c.sweep("test");
    expect(summary!.pages).toBeGreaterThanOrEqual(4);
    expect(await intentStatus(abandoned.id)).toBe("reclaimed");
  });

  it("destroys the orphans of other batches while one sandbox is slow to inspect: a slow lookup holds back only its own batch", async () => {
    // Once, every sandbox was destroyed only after the whole pass. Due rows are judged
    // a batch at a time (one transaction), so a slow lookup holds back its own batch's rows only.
    const { batchSize } = reclaimBatching(c.ctx.config.sweepLanes);
    const slow = await seedIntent({ creator: dead }, "0001-abandoned-slow");
    const rest = [];
    for (let i = 0; i < batchSize * 2; i++) rest.push(await seedIntent({ creator: dead }, `0002-abandoned-${String(i).padStart(2, "0")}`));
    for (let i = 0; i < 12; i++) await seedIntent({ creator: self() }, `0003-live-${String(i).padStart(2, "0")}`);
    await h.emu.admin.setFault({ match: { name: slow.name }, fault: { kind: "latency", ms: 1000 }, times: 1 });
    await c.sweep("test");
    expect(await intentStatus(slow.id)).toBe("reclaimed");
    const slowJudged = await h.db.db.proof.findFirstOrThrow({ where: { kind: "creation_intent", verdict: "reclaim", intentId: slow.id } });
    // In id order, the slow row's batch is it and the next batchSize - 1 rows; the rows after those are in other batches.
    for (const other of rest.slice(batchSize - 1)) {
      const lease = await h.db.db.environmentLease.findFirstOrThrow({ where: { intentId: other.id } });
      expect(lease).toMatchObject({ status: "expired", cleanupStatus: "destroyed" });
      expect(lease.endedAt!.getTime()).toBeLessThanOrEqual(slowJudged.evaluatedAt.getTime());
    }
    for (const other of rest) expect(await intentStatus(other.id)).toBe("reclaimed");
  });

  it("keeps its lanes working across page boundaries: a slow reclaim on the first page holds back no later page", async () => {
    // Both outside the exited creators' first pass (no creator boot id): found by the paging alone.
    const slow = await seedIntent({ creator: dead }, "0003-slow");
    for (let i = 0; i < 12; i++) await seedIntent({ creator: self() }, `0004-live-${String(i).padStart(2, "0")}`);
    const fast = await seedIntent({ creator: dead }, "0005-fast");
    await h.db.db.sandboxCreationIntent.updateMany({ where: { id: { in: [slow.id, fast.id] } }, data: { creatorBootId: null } });
    await h.emu.admin.setFault({ match: { name: slow.name }, fault: { kind: "latency", ms: 1500 }, times: 1 });
    await c.sweep("test");
    expect(await intentStatus(slow.id)).toBe("reclaimed");
    expect(await intentStatus(fast.id)).toBe("reclaimed");
    // Without the lanes (server/lib/lanes.ts), the pager waited for the slow page: the later row was not even read yet.
    const slowJudged = await h.db.db.proof.findFirstOrThrow({ where: { kind: "creation_intent", verdict: "reclaim", intentId: slow.id } });
    const fastLease = await h.db.db.environmentLease.findFirstOrThrow({ where: { intentId: fast.id } });
    expect(fastLease).toMatchObject({ status: "expired", cleanupStatus: "destroyed" });
    expect(fastLease.endedAt!.getTime()).toBeLessThan(slowJudged.evaluatedAt.getTime());
    for (const id of [slow.id, fast.id]) {
      expect(await h.db.db.proof.count({ where: { kind: "creation_intent", verdict: "reclaim", intentId: id } })).toBe(1);
      expect(await h.db.db.environmentLease.count({ where: { intentId: id } })).toBe(1);
    }
  });

  it("sweeps an exited creator's intents first, before a backlog of live creators' intents in id order", async () => {
    const canary = await seedIntent({ creator: dead }, "0006-canary");
    await h.db.db.sandboxCreationIntent.update({ where: { id: canary.id }, data: { creatorBootId: null } });
    for (let i = 0; i < 15; i++) await seedIntent({ creator: self() }, `0007-live-${String(i).padStart(2, "0")}`);
    const prior = await seedIntent({ creator: dead }, "0008-prior");
    // The first row in id order is slow to inspect: a pass in id order reaches `prior` only after it.
    await h.emu.admin.setFault({ match: { name: canary.name }, fault: { kind: "latency", ms: 1500 }, times: 1 });
    await c.sweep("test");
    expect(await intentStatus(prior.id)).toBe("reclaimed");
    expect(await intentStatus(canary.id)).toBe("reclaimed");
    const canaryJudged = await h.db.db.proof.findFirstOrThrow({ where: { kind: "creation_intent", verdict: "reclaim", intentId: canary.id } });
    const priorLease = await h.db.db.environmentLease.findFirstOrThrow({ where: { intentId: prior.id } });
    expect(priorLease).toMatchObject({ status: "expired", cleanupStatus: "destroyed" });
    expect(priorLease.endedAt!.getTime()).toBeLessThan(canaryJudged.evaluatedAt.getTime());
    // Its creator's exit is proven on its own proof, then the reclaim, each once.
    expect(await h.db.db.proof.count({ where: { kind: "creation_intent", intentId: prior.id } })).toBe(2);
    expect(await sandboxState(prior.sandboxId!)).toMatch(DELETED);
  });

  it("with fewer lanes than due rows, two controllers on one backlog reclaim each row exactly once, and no reclaimed lease is ever committed unclaimed", async () => {
    const db = h.db.db;
    const states = await recordPendingCleanupStates(db);
    try {
      const backlog = [];
      for (let i = 0; i < 12; i++) backlog.push(await seedIntent({ creator: dead }, `0009-backlog-${String(i).padStart(2, "0")}`));
      const [a, b] = [await h.controller({ pageSize: 5, sweepLanes: 3 }), await h.controller({ pageSize: 5, sweepLanes: 2 })];
      await Promise.all([a!.sweep("test"), b!.sweep("test")]);
      for (const intent of backlog) {
        expect(await intentStatus(intent.id)).toBe("reclaimed");
        expect(await db.proof.count({ where: { kind: "creation_intent", verdict: "reclaim", intentId: intent.id } })).toBe(1);
        const [lease, ...more] = await db.environmentLease.findMany({ where: { intentId: intent.id } });
        expect(more).toEqual([]);
        // Destroyed by the attempt its reclaim claimed, after the ownership proof (§2.9).
        expect(lease).toMatchObject({ status: "expired", cleanupStatus: "destroyed", terminationReceipt: expect.objectContaining({ attemptId: lease!.claimAttemptId }) });
        expect(await db.proof.count({ where: { kind: "sandbox_ownership", verdict: "owned", leaseId: lease!.id } })).toBe(1);
        expect(await sandboxState(intent.sandboxId!)).toMatch(DELETED);
      }
      const seen = await states.seen("l.intent_id = ANY($1)", backlog.map((i) => i.id));
      expect(seen.length).toBeGreaterThanOrEqual(backlog.length);
      expect(seen.filter((x) => !x.claimed)).toEqual([]);
    } finally {
      await states.stop();
    }
  });

  it("commits an intent whose lease did commit", async () => {
    const seed = await seedIntent({ creator: dead, sandboxLabels: null });
    await h.db.db.environmentLease.create({ data: { instanceId: "inst-a", companyId: "co-1", provider: "emulator", intentId: seed.id, acquisitionOutcome: "created", status: "active" } });
    await c.sweep("test");
    expect(await intentStatus(seed.id)).toBe("committed");
  });
});

describe("teardown fences", () => {
  async function fencedLease(claimer: Identity | null, opts: { recordAttempt?: string; leaseAttempt?: string; fencedForMs?: number } = {}) {
    const name = `rw-create-fence-${crypto.randomUUID()}`;
    const planted = await h.emu.admin.plant({ name, labels: buildLabels({ instanceId: "inst-a", companyId: "co-1", operationId: name }) });
    const recordAttempt = opts.recordAttempt ?? "att-1";
    const lease = await h.db.db.environmentLease.create({
      data: {
        instanceId: "inst-a",
        companyId: "co-1",
        provider: "emulator",
        providerLeaseId: planted.id,
        sandboxName: name,
        acquisitionOutcome: "created",
        status: "pending_cleanup",
        claimAttemptId: opts.leaseAttempt ?? recordAttempt,
        claimRecord: json({ attemptId: recordAttempt, claimer }),
        fencedUntil: new Date(Date.now() + (opts.fencedForMs ?? 15 * 60_000)),
      },
    });
    return { lease, sandboxId: planted.id };
  }

  async function leaseStatus(id: string) {
    return (await h.db.db.environmentLease.findUniqueOrThrow({ where: { id } })).status;
  }

  it("ends the fence of a claim whose claimer exited and destroys the sandbox", async () => {
    const { lease, sandboxId } = await fencedLease(dead);
    await c.sweep("test");
    expect(await leaseStatus(lease.id)).toBe("expired");
    expect(await sandboxState(sandboxId)).toMatch(DELETED);
    expect((await h.db.db.proof.findFirstOrThrow({ where: { leaseId: lease.id } })).reason).toBe("claimer_exited");
  });

  it("keeps the fence of a newer claim that kept an older attempt's record", async () => {
    const { lease, sandboxId } = await fencedLease(dead, { recordAttempt: "att-1", leaseAttempt: "att-2" });
    await c.sweep("test");
    expect(await leaseStatus(lease.id)).toBe("pending_cleanup");
    expect(await sandboxState(sandboxId)).toBe("started");
  });

  it("keeps the fences of a live claimer, another host's claimer and an unidentified one", async () => {
    for (const claimer of [self(), foreign(), null]) {
      const { lease, sandboxId } = await fencedLease(claimer);
      await c.sweep("test");
      expect(await leaseStatus(lease.id)).toBe("pending_cleanup");
      expect(await sandboxState(sandboxId)).toBe("started");
    }
  });

  it("tears down after an expired fence whatever the claimer", async () => {
    const { lease, sandboxId } = await fencedLease(foreign(), { fencedForMs: -1000 });
    await c.sweep("test");
    expect(await leaseStatus(lease.id)).toBe("expired");
    expect(await sandboxState(sandboxId)).toMatch(DELETED);
  });

  it("pages past more live fences than one page to release a lost one", async () => {
    for (let i = 0; i < 12; i++) await fencedLease(self());
    const { lease } = await fencedLease(dead);
    await c.sweep("test");
    expect(await leaseStatus(lease.id)).toBe("expired");
  });
});
