import type { Db } from "../db/client";
import { LABEL_KEYS } from "../providers/labels";
import type { SandboxView } from "../providers/types";
import type { Observer } from "../services/observer";
import { accruedCost } from "./cost";
import { judgeSandbox } from "./ownership";
import { listOwnSandboxes, loadRecords } from "./records";

/**
 * The orphans page's inventory (issue 13): an inventory pass lists this instance's sandboxes
 * at the provider (paged by the provider client), judges each once and stores what it saw in
 * `sandbox_inventory`; the page reads that table one page at a time and says how old it is.
 * Before, every poll of every open tab listed the provider whole and judged every sandbox.
 *
 * The inventory is only ever a view: a dry run reads each chosen sandbox from the provider
 * again, and a reclaim or destroy proves ownership on a fresh read at that moment.
 */

/** An inventory older than this starts a new pass in the background (the page is served from the old one). */
export const INVENTORY_REFRESH_MS = 5_000;
/** ...or older than this many times its pass took, if longer: passes keep at most 1/4 of a core busy (about 4 s at 10 k sandboxes). */
const PASS_DUTY = 4;

/** Sandboxes whose records are loaded and judged together, and rows written per statement. */
const CHUNK = 1000;

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

/**
 * The pass's work without writing: this instance's sandboxes listed whole and each judged
 * at `now` (what every orphans.list request did before the inventory).
 */
export async function judgeInventory(db: Db, observer: Observer, instanceId: string, now: Date): Promise<InventoryRow[]> {
  const sandboxes = await listOwnSandboxes(observer, ALL, instanceId, now);
  const rows: InventoryRow[] = [];
  for (let i = 0; i < sandboxes.length; i += CHUNK) {
    const chunk = sandboxes.slice(i, i + CHUNK);
    const records = await loadRecords(db, instanceId, chunk);
    for (const s of chunk) {
      const j = judgeSandbox(observer, instanceId, s, records.get(s.id)!, now);
      rows.push({
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
      });
    }
  }
  return rows;
}

/**
 * One inventory pass: list, judge, store, forget what the provider no longer lists. Two
 * passes of one instance never write at once (an advisory lock: a background pass gives
 * way, a `waiting` one — an instance's first, which the page waits for — waits its turn),
 * and a pass never overwrites a newer one. Returns null when it gave way.
 */
export async function refreshInventory(db: Db, observer: Observer, instanceId: string, now = new Date(), waiting = false): Promise<InventoryPass | null> {
  const started = performance.now();
  const rows = await judgeInventory(db, observer, instanceId, now);
  const key = `sandbox_inventory:${instanceId}`;
  return db.$transaction(
    async (tx) => {
      if (waiting) await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext(${key}))`;
      else {
        const [lock] = await tx.$queryRaw<{ ok: boolean }[]>`SELECT pg_try_advisory_xact_lock(hashtext(${key})) AS ok`;
        if (!lock?.ok) return null;
      }
      const last = await tx.sandboxInventoryPass.findUnique({ where: { instanceId } });
      if (last && last.listedAt >= now) return null;
      for (let i = 0; i < rows.length; i += CHUNK) {
        const chunk = JSON.stringify(rows.slice(i, i + CHUNK));
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
      const pass = { listedAt: now, sandboxes: rows.length, tookMs: Math.round(performance.now() - started) };
      await tx.sandboxInventoryPass.upsert({ where: { instanceId }, create: { instanceId, ...pass }, update: pass });
      return pass;
    },
    { timeout: 120_000, maxWait: 10_000 },
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
  } else if (now.getTime() - last.listedAt.getTime() > Math.max(maxAgeMs, last.tookMs * PASS_DUTY) && !mapOf(running, db).has(instanceId)) {
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
