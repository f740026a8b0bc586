import type { Db } from "../db/client";
import { LABEL_KEYS } from "../providers/labels";
import type { SandboxView } from "../providers/types";
import type { Observer } from "../services/observer";
import { accruedCost } from "./cost";
import { judgeSandbox } from "./ownership";
import { loadRecords, ownSandboxPages } from "./records";

/**
 * The orphans page's inventory (docs/decisions/0003-cost-at-scale.md): an inventory pass lists this instance's sandboxes
 * at the provider page by page, judges each once and stores what it saw in
 * `sandbox_inventory`; the page reads that table one page at a time and says how old it is.
 * Before, every poll of every open tab listed the provider whole and judged every sandbox.
 *
 * The inventory is only ever a view: a dry run reads each chosen sandbox from the provider
 * again, and a reclaim or destroy proves ownership on a fresh read at that moment.
 *
 * The controllers' teardown sweep runs passes too when orphans.cost_over is set
 * (controller/orphan-cost.ts), and judges that alert on what is stored here
 * (alerts/orphan-cost.ts); a pass itself judges no alert.
 */

/** An inventory older than this starts a new pass in the background (the page is served from the old one). */
export const INVENTORY_REFRESH_MS = 5_000;
/** ...or older than this many times its pass took, if longer: passes keep at most 1/4 of a core busy (about 4 s at 10 k sandboxes). */
const PASS_DUTY = 4;

/** Whether an inventory listed at `last.listedAt` is due a new pass at `now` (null: there is none yet). */
export function inventoryStale(last: { listedAt: Date; tookMs: number } | null, now: Date, maxAgeMs: number): boolean {
  return !last || now.getTime() - last.listedAt.getTime() > Math.max(maxAgeMs, last.tookMs * PASS_DUTY);
}

/**
 * Sandboxes (provider pages gathered) whose records are loaded and judged together, and rows
 * written per statement: all a pass holds at once, whatever the number of sandboxes. 250, not
 * 1,000: the server's RSS peak over a pass at 10 k sandboxes +60 → +24 MB, the pass 2.0 → 2.3 s.
 */
const CHUNK = 250;

/**
 * A pass's bound, listing included (it lists inside its transaction): generous, since a real
 * provider's pages are slower than the emulator's; every request has its own timeout.
 */
const PASS_TIMEOUT_MS = 600_000;

const ALL = { all: true } as const;

/** One sandbox as the pass saw and judged it. */
interface InventoryRow {
  sandbox_id: string;
  name: string;
  company_id: string | null;
  labels: Record<string, string>;
  state: string;
  created_at: string;
  cpu: number;
  memory: number;
  disk: number;
  hourly_cost: number;
  verdict: string | null;
  orphan_since: string | null;
  accrued_cost: number | null;
}

export interface InventoryPass {
  listedAt: Date;
  sandboxes: number;
  tookMs: number;
}

/** Provider pages regrouped into chunks of at least `size` sandboxes (the last one smaller). */
async function* chunksOf(pages: AsyncIterable<SandboxView[]>, size: number): AsyncGenerator<SandboxView[], void, undefined> {
  let chunk: SandboxView[] = [];
  for await (const page of pages) {
    chunk.push(...page);
    if (chunk.length >= size) {
      yield chunk;
      chunk = [];
    }
  }
  if (chunk.length) yield chunk;
}

/**
 * The pass's work without writing, one chunk at a time: this instance's sandboxes listed
 * page by page and each judged at `now` by the engine's ownership rules (judgeSandbox).
 */
export async function* judgeInventoryChunks(db: Db, observer: Observer, instanceId: string, now: Date, chunkSize = CHUNK): AsyncGenerator<InventoryRow[], void, undefined> {
  for await (const chunk of chunksOf(ownSandboxPages(observer, ALL, instanceId, now), chunkSize)) {
    const records = await loadRecords(db, instanceId, chunk);
    yield chunk.map((s) => {
      const j = judgeSandbox(observer, instanceId, s, records.get(s.id)!, now);
      return {
        sandbox_id: s.id,
        name: s.name,
        company_id: s.labels[LABEL_KEYS.company] ?? null,
        labels: s.labels,
        state: s.state,
        created_at: new Date(s.createdAt).toISOString(),
        cpu: s.cpu,
        memory: s.memory,
        disk: s.disk,
        hourly_cost: s.hourlyCost,
        verdict: j.held ? null : j.verdict,
        orphan_since: j.held ? null : j.orphanSince.toISOString(),
        accrued_cost: j.held ? null : accruedCost(s.hourlyCost, j.orphanSince, now),
      };
    });
  }
}

/** All of it at once: what every orphans.list request did before the inventory (the bench's "before"). */
export async function judgeInventory(db: Db, observer: Observer, instanceId: string, now: Date): Promise<InventoryRow[]> {
  const rows: InventoryRow[] = [];
  for await (const chunk of judgeInventoryChunks(db, observer, instanceId, now)) rows.push(...chunk);
  return rows;
}

/**
 * One inventory pass: list, judge, store, forget what the provider no longer lists. Two
 * passes of one instance never write at once (an advisory lock: a background pass gives
 * way, a `waiting` one — an instance's first, which the page waits for — waits its turn),
 * and a pass never overwrites a newer one. Returns null when it gave way.
 *
 * It streams (docs/decisions/0003-cost-at-scale.md): each chunk of the listing is judged and upserted before the next
 * is fetched, inside one transaction, so a page reads the previous inventory until the pass
 * commits, and a listing that fails part-way leaves it untouched.
 */
export async function refreshInventory(db: Db, observer: Observer, instanceId: string, now = new Date(), waiting = false, chunkSize = CHUNK): Promise<InventoryPass | null> {
  const started = performance.now();
  const key = `sandbox_inventory:${instanceId}`;
  return db.$transaction(
    async (tx) => {
      // The lock before the listing: a pass that gives way lists nothing.
      if (waiting) await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext(${key}))`;
      else {
        const [lock] = await tx.$queryRaw<{ ok: boolean }[]>`SELECT pg_try_advisory_xact_lock(hashtext(${key})) AS ok`;
        if (!lock?.ok) return null;
      }
      const last = await tx.sandboxInventoryPass.findUnique({ where: { instanceId } });
      if (last && last.listedAt >= now) return null;
      let sandboxes = 0;
      for await (const rows of judgeInventoryChunks(db, observer, instanceId, now, chunkSize)) {
        const chunk = JSON.stringify(rows);
        sandboxes += rows.length;
        await tx.$executeRaw`
          INSERT INTO sandbox_inventory (instance_id, sandbox_id, name, company_id, labels, state, created_at, cpu, memory, disk, hourly_cost, verdict, orphan_since, accrued_cost, seen_at)
          SELECT ${instanceId}, x.sandbox_id, x.name, x.company_id, x.labels, x.state, x.created_at, x.cpu, x.memory, x.disk, x.hourly_cost, x.verdict, x.orphan_since, x.accrued_cost, ${now}
          FROM jsonb_to_recordset(${chunk}::jsonb) AS x(sandbox_id text, name text, company_id text, labels jsonb, state text, created_at timestamptz, cpu float8, memory float8, disk float8, hourly_cost float8, verdict text, orphan_since timestamptz, accrued_cost float8)
          ON CONFLICT (instance_id, sandbox_id) DO UPDATE SET
            name = EXCLUDED.name, company_id = EXCLUDED.company_id, labels = EXCLUDED.labels, state = EXCLUDED.state, created_at = EXCLUDED.created_at,
            cpu = EXCLUDED.cpu, memory = EXCLUDED.memory, disk = EXCLUDED.disk, hourly_cost = EXCLUDED.hourly_cost,
            verdict = EXCLUDED.verdict, orphan_since = EXCLUDED.orphan_since, accrued_cost = EXCLUDED.accrued_cost, seen_at = EXCLUDED.seen_at`;
      }
      // What this pass did not see is gone (or no longer this instance's).
      await tx.$executeRaw`DELETE FROM sandbox_inventory WHERE instance_id = ${instanceId} AND seen_at < ${now}`;
      const pass = { listedAt: now, sandboxes, tookMs: Math.round(performance.now() - started) };
      await tx.sandboxInventoryPass.upsert({ where: { instanceId }, create: { instanceId, ...pass }, update: pass });
      return pass;
    },
    { timeout: PASS_TIMEOUT_MS, maxWait: 10_000 },
  );
}

/** The pass running now per database and instance: polls of every tab share one. */
const running = new WeakMap<Db, Map<string, Promise<InventoryPass | null>>>();
/** The last background pass's failure per database and instance, until one succeeds. */
const failures = new WeakMap<Db, Map<string, string>>();

function mapOf<T>(m: WeakMap<Db, Map<string, T>>, db: Db): Map<string, T> {
  let inner = m.get(db);
  if (!inner) m.set(db, (inner = new Map()));
  return inner;
}

/** Starts a pass unless one of this instance is already running in this process; the same promise either way. */
export function startPass(db: Db, observer: Observer, instanceId: string, now = new Date(), waiting = false): Promise<InventoryPass | null> {
  const passes = mapOf(running, db);
  const current = passes.get(instanceId);
  if (current) return current;
  const p = refreshInventory(db, observer, instanceId, now, waiting)
    .then((pass) => {
      mapOf(failures, db).delete(instanceId);
      return pass;
    })
    .finally(() => passes.delete(instanceId));
  passes.set(instanceId, p);
  return p;
}

export interface InventoryState {
  /** When the provider was listed for the inventory the page reads. */
  listedAt: Date;
  tookMs: number;
  /** A newer pass is running. */
  refreshing: boolean;
  /** The last background pass failed with this; the page still shows the older inventory. */
  error: string | null;
}

/**
 * The inventory the page may read: the first pass of an instance is waited for (there is
 * nothing to show before it); an older one than INVENTORY_REFRESH_MS (or PASS_DUTY times its
 * pass) is served while a new pass runs in the background.
 */
export async function currentInventory(db: Db, observer: Observer, instanceId: string, now: Date, maxAgeMs = INVENTORY_REFRESH_MS): Promise<InventoryState> {
  let last = await db.sandboxInventoryPass.findUnique({ where: { instanceId } });
  if (!last) {
    await startPass(db, observer, instanceId, now, true);
    // Another process's first pass may have been newer than ours: either is a first inventory.
    last = await db.sandboxInventoryPass.findUniqueOrThrow({ where: { instanceId } });
  } else if (inventoryStale(last, now, maxAgeMs) && !mapOf(running, db).has(instanceId)) {
    startPass(db, observer, instanceId).catch((err: unknown) => mapOf(failures, db).set(instanceId, err instanceof Error ? err.message : String(err)));
  }
  return { listedAt: last.listedAt, tookMs: last.tookMs, refreshing: mapOf(running, db).has(instanceId), error: mapOf(failures, db).get(instanceId) ?? null };
}

/** After a destroy: the page stops showing these sandboxes now, not at the next pass. */
export async function forgetSandboxes(db: Db, instanceId: string, sandboxIds: readonly string[]): Promise<void> {
  if (sandboxIds.length) await db.sandboxInventory.deleteMany({ where: { instanceId, sandboxId: { in: [...sandboxIds] } } });
}

/** A stored row as the provider view it was (what judgeSandbox reads of a sandbox). */
export function viewOfRow(r: { sandboxId: string; name: string; labels: unknown; state: string; createdAt: Date; cpu: number; memory: number; disk: number; hourlyCost: number }, at: Date): SandboxView {
  return {
    id: r.sandboxId,
    name: r.name,
    labels: r.labels as Record<string, string>,
    state: r.state,
    desiredState: null,
    errorReason: null,
    createdAt: r.createdAt.toISOString(),
    ageSeconds: Math.max(0, Math.floor((at.getTime() - r.createdAt.getTime()) / 1000)),
    cpu: r.cpu,
    memory: r.memory,
    disk: r.disk,
    hourlyCost: r.hourlyCost,
    toolboxProxyUrl: null,
  };
}
