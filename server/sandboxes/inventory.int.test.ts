import crypto from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ControllerContext } from "../controller/context";
import { buildLabels } from "../providers/labels";
import type { SandboxView } from "../providers/types";
import { observerOf } from "../services/observer";
import { confirmWord } from "../shared/confirm";
import { servicesOf } from "../services";
import { startControllerHarness, type ControllerHarness } from "../test/controller";
import { TEST_ADMIN, testUser } from "../test/users";
import { recordPendingCleanupStates } from "../test/db";
import { createCaller } from "../trpc/root";
import { createTRPCContext } from "../trpc/trpc";
import { INVENTORY_REFRESH_MS, refreshInventory, startPass } from "./inventory";
import { waitFor } from "../test/controller";
import { listOrphans } from "./list";

/**
 * The orphans page's inventory (docs/decisions/0003-cost-at-scale.md): polls read a stored listing instead of the
 * provider; actions read the provider again. PostgreSQL and the in-process emulator; no
 * controller runs here.
 */

let h: ControllerHarness;
let service: ControllerContext;
/** Every listing of the provider by labels this file's services make. */
let listings = 0;
let failListing = false;
/** A sandbox name the provider answers for with labels that cannot be read (an unexpected error in the reclaim). */
let unreadable: string | null = null;
let runId = "";

const services = () => servicesOf(service);
const caller = () => createCaller(() => createTRPCContext({ user: TEST_ADMIN, headers: new Headers(), db: h.db.db, services: services() }));
const all = { all: true } as const;
/** By default well past INVENTORY_REFRESH_MS and 4× any pass here (a slow pass is refreshed less often). */
const later = (d: Date, ms = INVENTORY_REFRESH_MS + 120_000) => new Date(d.getTime() + ms);

/** A reclaimable orphan: an ended lease of this instance names it, and its run finished. */
async function orphan(tag: string) {
  const s = await h.emu.admin.plant({ name: `inv-${tag}-${crypto.randomBytes(3).toString("hex")}`, labels: buildLabels({ instanceId: "inst-a", companyId: "co-1", runId }), cpu: 1, memory: 2, disk: 10, createdAt: new Date(Date.now() - 3600_000).toISOString() });
  await h.db.db.environmentLease.create({ data: { runId, instanceId: "inst-a", companyId: "co-1", provider: "emulator", providerLeaseId: s.id, sandboxName: s.name, acquisitionOutcome: "created", status: "expired", endedAt: new Date(Date.now() - 1800_000) } });
  return s;
}

/** A listing that fails before its first page. */
async function* unreachable(): AsyncGenerator<SandboxView[], void, undefined> {
  throw new Error("provider unreachable");
}

async function alive(): Promise<Set<string>> {
  return new Set((await h.emu.admin.sandboxes()).filter((s) => !/^destroy(ing|ed)$/.test(s.state)).map((s) => s.id));
}

beforeAll(async () => {
  h = await startControllerHarness();
  const base = h.service();
  const provider = Object.create(base.provider, {
    listPagesByLabels: {
      value: (...args: Parameters<ControllerContext["provider"]["listPagesByLabels"]>) => {
        listings += 1;
        return failListing ? unreachable() : base.provider.listPagesByLabels(...args);
      },
    },
    getByName: {
      value: async (...args: Parameters<ControllerContext["provider"]["getByName"]>) => {
        const found = await base.provider.getByName(...args);
        if (!found || args[0] !== unreadable) return found;
        return Object.defineProperty({ ...found }, "labels", {
          get() {
            throw new Error("labels unreadable");
          },
        });
      },
    },
  }) as ControllerContext["provider"];
  service = { ...base, provider };
  await h.db.db.instance.upsert({ where: { id: "inst-a" }, create: { id: "inst-a", name: "a" }, update: {} });
  const run = await h.db.db.run.create({ data: { instanceId: "inst-a", companyId: "co-1", taskId: "done", agent: "a", provider: "codex", target: "remote", sandboxMode: "warm", status: "succeeded", finishedAt: new Date(Date.now() - 3600_000) } });
  runId = run.id;
  for (const tag of ["a", "b", "c"]) await orphan(tag);
});
afterAll(() => h.close());

describe("orphans inventory", () => {
  it("polls read the inventory: one provider listing for many pages, and a dry run reads only the chosen sandboxes", async () => {
    const now = new Date();
    const before = listings;
    const first = await listOrphans(h.db.db, services().observer, all, "inst-a", {}, now);
    expect(first.items).toHaveLength(3);
    for (let i = 0; i < 5; i++) await listOrphans(h.db.db, services().observer, all, "inst-a", { pageSize: 1 }, now);
    const plan = await caller().orphans.reclaim({ dryRun: true, sandboxIds: first.items.slice(0, 2).map((r) => r.id) });
    expect(plan.counts.would_destroy).toBe(2);
    // Before the inventory: 6 listings for the pages and one more for the dry run.
    expect(listings - before).toBe(1);
    expect(first.listedAt).toEqual(now);
  });

  it("a new orphan appears after the next inventory pass, not before; a stale inventory is served while the pass runs", async () => {
    const pass = await refreshInventory(h.db.db, services().observer, "inst-a");
    expect(pass).not.toBeNull();
    const fresh = await orphan("new");
    const soon = later(pass!.listedAt, 1000);
    const before = await listOrphans(h.db.db, services().observer, all, "inst-a", {}, soon);
    expect(before.items.map((r) => r.id)).not.toContain(fresh.id);
    expect(before.inventory.refreshing).toBe(false);

    // Older than INVENTORY_REFRESH_MS: this answer is the old inventory, and a pass starts.
    const stale = await listOrphans(h.db.db, services().observer, all, "inst-a", {}, later(pass!.listedAt));
    expect(stale.items.map((r) => r.id)).not.toContain(fresh.id);
    expect(stale.inventory.refreshing).toBe(true);
    const next = await startPass(h.db.db, services().observer, "inst-a");
    const after = await listOrphans(h.db.db, services().observer, all, "inst-a", {}, next ? later(next.listedAt, 1000) : new Date());
    expect(after.items.map((r) => r.id)).toContain(fresh.id);
    expect(after.totals.count).toBe(before.totals.count + 1);
    expect(after.byVerdict.reclaimable).toBe(before.byVerdict.reclaimable + 1);
  });

  it("a sandbox destroyed since the inventory is shown as of the pass but never reclaimed twice", async () => {
    const pass = (await refreshInventory(h.db.db, services().observer, "inst-a"))!;
    const [gone, kept] = (await listOrphans(h.db.db, services().observer, all, "inst-a", { pageSize: 2 }, later(pass.listedAt, 100))).items;
    await h.emu.provider().destroy(gone!.id);
    // The page is as of its pass: the destroyed sandbox is still listed until the next one.
    const page = await listOrphans(h.db.db, services().observer, all, "inst-a", {}, later(pass.listedAt, 200));
    expect(page.items.map((r) => r.id)).toContain(gone!.id);

    const c = caller();
    const plan = await c.orphans.reclaim({ dryRun: true, sandboxIds: [gone!.id, kept!.id] });
    expect(plan.results.find((r) => r.sandboxId === gone!.id)).toMatchObject({ outcome: "refused", reason: expect.stringMatching(/not among this instance's sandboxes/) });
    expect(plan.results.find((r) => r.sandboxId === kept!.id)).toMatchObject({ outcome: "would_destroy" });
    const done = await c.orphans.reclaim({ dryRun: false, planId: plan.planId, sandboxIds: [kept!.id], confirm: confirmWord(1) });
    expect(done.results[0]).toMatchObject({ outcome: "destroyed" });
    // The same plan again: the provider no longer has it; nothing is destroyed a second time.
    const again = await c.orphans.reclaim({ dryRun: false, planId: plan.planId, sandboxIds: [kept!.id], confirm: confirmWord(1) });
    expect(again.results[0]).toMatchObject({ outcome: "already_gone" });
    const receipts = await h.db.db.environmentLease.findMany({ where: { providerLeaseId: kept!.id, cleanupStatus: "destroyed" } });
    expect(receipts).toHaveLength(1);
    // A destroy takes its sandbox off the page at once, not at the next pass.
    const now = await listOrphans(h.db.db, services().observer, all, "inst-a", {}, later(pass.listedAt, 300));
    expect(now.items.map((r) => r.id)).not.toContain(kept!.id);
  });

  it("an unexpected error on one sandbox fails that one alone: the others are destroyed and every result reaches the audit entry", async () => {
    const [bad, good] = [await orphan("bad"), await orphan("good")];
    await refreshInventory(h.db.db, services().observer, "inst-a");
    const c = caller();
    const plan = await c.orphans.reclaim({ dryRun: true, sandboxIds: [bad.id, good.id] });
    expect(plan.counts.would_destroy).toBe(2);
    unreadable = bad.name;
    const done = await c.orphans
      .reclaim({ dryRun: false, planId: plan.planId, sandboxIds: [bad.id, good.id], confirm: confirmWord(2) })
      .finally(() => (unreadable = null));
    expect(done.results.map((r) => [r.sandboxId, r.outcome])).toEqual([
      [bad.id, "failed"],
      [good.id, "destroyed"],
    ]);
    expect(done.results[0]!.reason).toBe("unexpected error: labels unreadable");
    expect(await alive()).toContain(bad.id);
    expect(await alive()).not.toContain(good.id);
    const audit = await h.db.db.auditEntry.findFirstOrThrow({ where: { action: "orphans.reclaim", targetId: plan.planId }, orderBy: { id: "desc" } });
    expect(audit.outcome).toBe("error");
    expect((audit.detail as { results: { sandboxId: string; outcome: string }[] }).results.map((r) => [r.sandboxId, r.outcome])).toEqual([
      [bad.id, "failed"],
      [good.id, "destroyed"],
    ]);
  });

  it("a stale inventory row never leads to a destroy: the dry run judges a fresh read, and the page judges its rows now", async () => {
    const pass = (await refreshInventory(h.db.db, services().observer, "inst-a"))!;
    const row = (await listOrphans(h.db.db, services().observer, all, "inst-a", { verdict: "reclaimable", pageSize: 1 }, later(pass.listedAt, 100))).items[0]!;
    expect(row.verdict).toBe("reclaimable");
    // Since the pass, the lease that named it is gone: labels alone prove nothing (§2.9).
    await h.db.db.environmentLease.deleteMany({ where: { providerLeaseId: row.id } });
    const page = await listOrphans(h.db.db, services().observer, all, "inst-a", {}, later(pass.listedAt, 200));
    expect(page.items.find((r) => r.id === row.id)).toMatchObject({ verdict: "unrecorded" });

    const plan = await caller().orphans.reclaim({ dryRun: true, sandboxIds: [row.id] });
    expect(plan.results[0]).toMatchObject({ outcome: "refused", verdict: "unrecorded" });
    expect(plan.confirmWord).toBeNull();
    expect(await alive()).toContain(row.id);
    // Every destroy in this file went through a fresh ownership proof of its lease.
    const destroyed = await h.db.db.environmentLease.findMany({ where: { cleanupStatus: "destroyed" } });
    expect(destroyed.length).toBeGreaterThan(0);
    for (const l of destroyed) {
      expect(await h.db.db.proof.findFirst({ where: { kind: "sandbox_ownership", leaseId: l.id, verdict: "owned" } })).not.toBeNull();
    }
  });

  it("a person who sees one company reads only that company's rows and counts, and cannot plan another's", async () => {
    const pass = (await refreshInventory(h.db.db, services().observer, "inst-a"))!;
    const run2 = await h.db.db.run.create({ data: { instanceId: "inst-a", companyId: "co-2", taskId: "done-2", agent: "a", provider: "codex", target: "remote", sandboxMode: "warm", status: "succeeded", finishedAt: new Date() } });
    const theirs = await h.emu.admin.plant({ name: `inv-co2-${crypto.randomBytes(3).toString("hex")}`, labels: buildLabels({ instanceId: "inst-a", companyId: "co-2", runId: run2.id }), cpu: 1, memory: 2, disk: 10 });
    await startPass(h.db.db, services().observer, "inst-a", later(pass.listedAt, 1));
    const co2 = createCaller(() => createTRPCContext({ user: testUser("operator", ["co-2"]), headers: new Headers(), db: h.db.db, services: services() }));
    const list = await co2.orphans.list({});
    expect(list.items.map((r) => r.id)).toEqual([theirs.id]);
    expect(list.totals.count).toBe(1);
    expect(Object.values(list.byVerdict).reduce((a, b) => a + b, 0)).toBe(1);
    const mine = (await caller().orphans.list({ companyId: "co-1", pageSize: 1 })).items[0]!;
    const plan = await co2.orphans.reclaim({ dryRun: true, sandboxIds: [mine.id, theirs.id] });
    expect(plan.results.find((r) => r.sandboxId === mine.id)).toMatchObject({ outcome: "refused", reason: expect.stringMatching(/not among this instance's sandboxes/) });
  });

  it("when a pass fails, the page keeps the last inventory and says why", async () => {
    const pass = (await refreshInventory(h.db.db, services().observer, "inst-a"))!;
    failListing = true;
    try {
      const stale = await listOrphans(h.db.db, services().observer, all, "inst-a", {}, later(pass.listedAt));
      expect(stale.inventory).toMatchObject({ refreshing: true, error: null });
      await expect(startPass(h.db.db, services().observer, "inst-a")).rejects.toThrow(/provider unreachable/);
      const after = await listOrphans(h.db.db, services().observer, all, "inst-a", {}, later(pass.listedAt, 100));
      expect(after.listedAt).toEqual(pass.listedAt);
      expect(after.inventory.error).toMatch(/provider unreachable/);
      expect(after.items.length).toBeGreaterThan(0);
    } finally {
      failListing = false;
    }
  });
});

describe("a streamed pass (more sandboxes than one provider page)", () => {
  // Another instance, listed two sandboxes a page and judged and written two at a time.
  const inst = "inst-p";
  const chunk = 2;
  /** What the next listing does after handing out its first page. */
  let afterFirstPage: "go_on" | "fail" | "probe_locks" = "go_on";
  /** Whether the first page's rows were locked by the pass when it asked for the second page. */
  let firstPageLocked: boolean | null = null;
  let at = new Date();
  const next = () => (at = new Date(at.getTime() + 60_000));

  function pagedObserver() {
    const paged = h.emu.provider({ instanceId: inst, pageSize: 2 });
    const provider = Object.create(paged, {
      listPagesByLabels: {
        value: async function* (...args: Parameters<ControllerContext["provider"]["listPagesByLabels"]>) {
          let asked = false;
          for await (const page of paged.listPagesByLabels(...args)) {
            yield page;
            // The pass asks for the next page only now. The first page holding a live sandbox
            // (a destroyed one is left out of the pass) is the one probed.
            const live = page.filter((s) => !/^destroy(ing|ed)$/.test(s.state)).map((s) => s.id);
            if (asked || !live.length) continue;
            asked = true;
            if (afterFirstPage === "fail") throw new Error("provider unreachable after one page");
            if (afterFirstPage === "probe_locks") firstPageLocked = await locked(live);
          }
        },
      },
    }) as ControllerContext["provider"];
    return observerOf({ ...service, provider });
  }

  /** Whether another transaction holds these inventory rows (an uncommitted upsert does). */
  async function locked(ids: string[]): Promise<boolean> {
    try {
      await h.db.db.$queryRaw`SELECT sandbox_id FROM sandbox_inventory WHERE instance_id = ${inst} AND sandbox_id = ANY(${ids}::text[]) FOR UPDATE NOWAIT`;
      return false;
    } catch (err) {
      if (/could not obtain lock|55P03/.test(String(err))) return true;
      throw err;
    }
  }

  const plant = (i: number) =>
    h.emu.admin.plant({ name: `str-${i}-${crypto.randomBytes(3).toString("hex")}`, labels: buildLabels({ instanceId: inst, companyId: "co-1", runId }), cpu: 1 + (i % 3), memory: 2, disk: 10 });
  const stored = async () =>
    (await h.db.db.sandboxInventory.findMany({ where: { instanceId: inst } })).map((r) => ({ id: r.sandboxId, seenAt: r.seenAt })).sort((a, b) => (a.id < b.id ? -1 : 1));
  const live = async () =>
    (await h.emu.admin.sandboxes()).filter((s) => s.labels["runwarden.instance"] === inst && !/^destroy(ing|ed)$/.test(s.state)).map((s) => s.id).sort();

  beforeAll(async () => {
    await h.db.db.instance.upsert({ where: { id: inst }, create: { id: inst, name: "p" }, update: {} });
    for (let i = 0; i < 7; i++) await plant(i);
  });

  it("stores every sandbox of every page, and forgets the ones that vanished", async () => {
    const observer = pagedObserver();
    const first = (await refreshInventory(h.db.db, observer, inst, next(), false, chunk))!;
    expect(first.sandboxes).toBe(7);
    expect((await stored()).map((r) => r.id)).toEqual(await live());

    const [gone1, gone2] = await live();
    await h.emu.provider().destroy(gone1!);
    await h.emu.provider().destroy(gone2!);
    const fresh = await plant(7);
    const second = (await refreshInventory(h.db.db, observer, inst, next(), false, chunk))!;
    expect(second.sandboxes).toBe(6);
    const rows = await stored();
    expect(rows.map((r) => r.id)).toEqual(await live());
    expect(rows.map((r) => r.id)).toContain(fresh.id);
    expect(rows.map((r) => r.id)).not.toContain(gone1);
    expect(rows.every((r) => r.seenAt.getTime() === second.listedAt.getTime())).toBe(true);
  });

  it("writes each chunk before it asks the provider for the next page (it never holds the whole listing)", async () => {
    afterFirstPage = "probe_locks";
    firstPageLocked = null;
    try {
      // Chunks of one sandbox: each page's live sandboxes are a whole chunk.
      const pass = await refreshInventory(h.db.db, pagedObserver(), inst, next(), false, 1);
      expect(pass?.sandboxes).toBe(6);
      // The first page's rows were upserted (and so locked by the pass's transaction) before the second page was fetched.
      expect(firstPageLocked).toBe(true);
      // ...and are free again once the pass committed.
      expect(await locked((await stored()).map((r) => r.id))).toBe(false);
    } finally {
      afterFirstPage = "go_on";
    }
  });

  it("a listing that fails part-way leaves the last inventory as it was", async () => {
    const before = await stored();
    const lastPass = await h.db.db.sandboxInventoryPass.findUniqueOrThrow({ where: { instanceId: inst } });
    await h.emu.provider().destroy((await live())[0]!);
    afterFirstPage = "fail";
    try {
      await expect(refreshInventory(h.db.db, pagedObserver(), inst, next(), false, chunk)).rejects.toThrow(/provider unreachable after one page/);
    } finally {
      afterFirstPage = "go_on";
    }
    expect(await stored()).toEqual(before);
    expect(await h.db.db.sandboxInventoryPass.findUniqueOrThrow({ where: { instanceId: inst } })).toEqual(lastPass);
    // The advisory lock went with the rolled-back transaction: the next pass runs.
    const pass = await waitFor("a pass after the failed one", () => refreshInventory(h.db.db, pagedObserver(), inst, next(), false, chunk));
    expect(pass.sandboxes).toBe(before.length - 1);
  });
});

describe("an operator's reclaim and the teardown sweep", () => {
  it("the lease an operator's reclaim makes is never committed unclaimed, so no sweep can take the teardown from the operator", async () => {
    const db = h.db.db;
    const states = await recordPendingCleanupStates(db);
    try {
      // Only an ended lease names it: the reclaim makes a new pending-cleanup lease for it.
      const target = await orphan("claim");
      const c = caller();
      const plan = await c.orphans.reclaim({ dryRun: true, sandboxIds: [target.id] });
      const done = await c.orphans.reclaim({ dryRun: false, planId: plan.planId, sandboxIds: [target.id], confirm: confirmWord(1) });
      expect(done.results.map((r) => r.outcome)).toEqual(["destroyed"]);
      const seen = await states.seen("l.provider_lease_id = $1", target.id);
      expect(seen.length).toBeGreaterThan(0);
      expect(seen.filter((s) => !s.claimed)).toEqual([]);
    } finally {
      await states.stop();
    }
  });
});
