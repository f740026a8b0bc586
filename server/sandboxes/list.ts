import { z } from "zod";
import { text } from "../text";
import { Prisma, type Db } from "../db/client";
import { LABEL_KEYS } from "../providers/labels";
import type { SandboxView } from "../providers/types";
import type { CompanyScope } from "../shared/roles";
import { FILTER_MAX } from "../shared/limits";
import { decodeOrphanCursor, encodeOrphanCursor, orphanCursorInput } from "../runs/cursor";
import type { Observer } from "../services/observer";
import { OWNERSHIP_VERDICTS, type OwnershipVerdict } from "../shared/confirm";
import { accruedCost, ORPHAN_SINCE_RULES, round6 } from "./cost";
import { currentInventory, viewOfRow } from "./inventory";
import { judgeSandbox, type Judgement } from "./ownership";
import { loadRecords, type SandboxRecords } from "./records";

/**
 * The orphans page's read model (orphans.list): one page of the inventory (inventory.ts) in
 * SQL, costliest first, its sandboxes judged again now from their records; counts and totals
 * from the inventory, as of its pass.
 */

export const orphanListInput = z.object({
  verdict: z.enum(OWNERSHIP_VERDICTS).optional(),
  companyId: text(FILTER_MAX.companyId).optional(),
  /** Part of a sandbox name or id. */
  search: text(FILTER_MAX.search).optional(),
  /** Where the page starts in the costliest-first order (from the previous page's `nextCursor`). */
  cursor: orphanCursorInput.optional(),
  pageSize: z.number().int().min(1).max(500).default(100),
});
export type OrphanListInput = z.input<typeof orphanListInput>;

export const orphanRowSchema = z.object({
  id: z.string(),
  name: z.string(),
  state: z.string(),
  companyId: z.string().nullable(),
  labels: z.record(z.string(), z.string()),
  run: z.object({ id: z.string(), status: z.string() }).nullable(),
  intent: z.object({ id: z.string(), status: z.string() }).nullable(),
  leaseIds: z.array(z.string()),
  createdAt: z.date(),
  ageSeconds: z.number().int(),
  /** USD per hour. */
  hourlyCost: z.number(),
  orphanSince: z.date(),
  orphanSinceRule: z.enum(ORPHAN_SINCE_RULES),
  /** USD accrued since orphanSince. */
  accruedCost: z.number(),
  verdict: z.enum(OWNERSHIP_VERDICTS),
  reason: z.string(),
});
export type OrphanRow = z.infer<typeof orphanRowSchema>;

export const orphanListOutput = z.object({
  instanceId: z.string(),
  /** When the provider was listed for the inventory this page comes from ("as of"). */
  listedAt: z.date(),
  /** When this page's sandboxes were judged from their records (now). */
  judgedAt: z.date(),
  inventory: z.object({
    /** How long the pass that listed it took. */
    tookMs: z.number().int(),
    /** A newer pass is running; the next poll shows it. */
    refreshing: z.boolean(),
    /** The last pass failed with this: the page still shows the older inventory. */
    error: z.string().nullable(),
  }),
  /**
   * One page of the matching orphans, the costliest first (as of `listedAt`), each verdict
   * judged now: a sandbox a live run took since the pass is left out of the page.
   */
  items: z.array(orphanRowSchema),
  /** Where the page starts among all matching orphans (0-based). */
  offset: z.number().int(),
  nextCursor: z.string().nullable(),
  /** All matching orphans in the inventory, not only this page. */
  totals: z.object({ count: z.number().int(), hourlyCost: z.number(), accruedCost: z.number() }),
  /** All orphans of this instance by verdict, whatever the filters. */
  byVerdict: z.record(z.enum(OWNERSHIP_VERDICTS), z.number().int()),
  /** This instance's sandboxes held by a live run (not orphans, not shown). */
  held: z.number().int(),
});
export type OrphanListOutput = z.infer<typeof orphanListOutput>;

function toRow(s: SandboxView, r: SandboxRecords, j: Extract<Judgement, { held: false }>, at: Date): OrphanRow {
  return {
    id: s.id,
    name: s.name,
    state: s.state,
    companyId: s.labels[LABEL_KEYS.company] ?? null,
    labels: s.labels,
    run: r.run ? { id: r.run.id, status: r.run.status } : null,
    intent: r.intent ? { id: r.intent.id, status: r.intent.status } : null,
    leaseIds: r.leases.map((l) => l.id),
    createdAt: new Date(s.createdAt),
    ageSeconds: s.ageSeconds,
    hourlyCost: s.hourlyCost,
    orphanSince: j.orphanSince,
    orphanSinceRule: j.orphanSinceRule,
    accruedCost: accruedCost(s.hourlyCost, j.orphanSince, at),
    verdict: j.verdict,
    reason: j.reason,
  };
}

type StoredRow = {
  sandbox_id: string;
  name: string;
  labels: unknown;
  state: string;
  created_at: Date;
  cpu: number;
  memory: number;
  disk: number;
  hourly_cost: number;
  accrued_cost: number;
};

export async function listOrphans(db: Db, observer: Observer, scope: CompanyScope, instanceId: string, raw: OrphanListInput, now = new Date()): Promise<OrphanListOutput> {
  const input = orphanListInput.parse(raw);
  const after = input.cursor ? decodeOrphanCursor(input.cursor) : null;
  const inventory = await currentInventory(db, observer, instanceId, now);
  const at = inventory.listedAt;

  const scoped = Prisma.sql`instance_id = ${instanceId} ${scope.all ? Prisma.empty : Prisma.sql`AND company_id = ANY(${scope.companies}::text[])`}`;
  const search = input.search?.toLowerCase();
  const filters = [
    Prisma.sql`verdict IS NOT NULL`,
    input.verdict ? Prisma.sql`verdict = ${input.verdict}` : null,
    input.companyId ? Prisma.sql`company_id = ${input.companyId}` : null,
    search ? Prisma.sql`(strpos(lower(name), ${search}) > 0 OR strpos(lower(sandbox_id), ${search}) > 0)` : null,
  ].filter((f): f is Prisma.Sql => f !== null);
  const matching = Prisma.sql`${scoped} AND ${Prisma.join(filters, " AND ")}`;
  // The keyset in the page index's own order (sandbox_inventory_page_idx): every column descending.
  const keyset = after ? Prisma.sql`AND (accrued_cost, hourly_cost, name, sandbox_id) < (${after.accruedCost}, ${after.hourlyCost}, ${after.name}, ${after.id})` : Prisma.empty;

  const [stored, totals, verdicts] = await Promise.all([
    db.$queryRaw<StoredRow[]>`
      SELECT sandbox_id, name, labels, state, created_at, cpu, memory, disk, hourly_cost, accrued_cost
      FROM sandbox_inventory WHERE ${matching} ${keyset}
      ORDER BY accrued_cost DESC, hourly_cost DESC, name DESC, sandbox_id DESC
      LIMIT ${input.pageSize + 1}`,
    db.$queryRaw<{ count: number; hourly: number; accrued: number }[]>`
      SELECT count(*)::int AS count, coalesce(sum(hourly_cost), 0)::float8 AS hourly, coalesce(sum(accrued_cost), 0)::float8 AS accrued
      FROM sandbox_inventory WHERE ${matching}`,
    db.$queryRaw<{ verdict: string | null; n: number }[]>`
      SELECT verdict, count(*)::int AS n FROM sandbox_inventory WHERE ${scoped} GROUP BY verdict`,
  ]);

  const page = stored.slice(0, input.pageSize);
  // Only this page's sandboxes are judged now, from their records.
  const views = page.map((r) => viewOfRow({ sandboxId: r.sandbox_id, name: r.name, labels: r.labels, state: r.state, createdAt: r.created_at, cpu: r.cpu, memory: r.memory, disk: r.disk, hourlyCost: r.hourly_cost }, at));
  const records = await loadRecords(db, instanceId, views);
  const items: OrphanRow[] = [];
  for (const s of views) {
    const r = records.get(s.id)!;
    const j = judgeSandbox(observer, instanceId, s, r, now);
    if (!j.held) items.push(toRow(s, r, j, at));
  }

  const byVerdict = Object.fromEntries(OWNERSHIP_VERDICTS.map((v) => [v, 0])) as Record<OwnershipVerdict, number>;
  let held = 0;
  for (const { verdict, n } of verdicts) {
    if (verdict === null) held += n;
    else if ((OWNERSHIP_VERDICTS as readonly string[]).includes(verdict)) byVerdict[verdict as OwnershipVerdict] += n;
  }
  const offset = after?.offset ?? 0;
  const last = page[page.length - 1];
  const total = totals[0] ?? { count: 0, hourly: 0, accrued: 0 };
  return {
    instanceId,
    listedAt: at,
    judgedAt: now,
    inventory: { tookMs: inventory.tookMs, refreshing: inventory.refreshing, error: inventory.error },
    items,
    offset,
    nextCursor:
      stored.length > input.pageSize && last
        ? encodeOrphanCursor({ accruedCost: last.accrued_cost, hourlyCost: last.hourly_cost, name: last.name, id: last.sandbox_id, offset: offset + page.length })
        : null,
    totals: { count: total.count, hourlyCost: round6(total.hourly), accruedCost: round6(total.accrued) },
    byVerdict,
    held,
  };
}
