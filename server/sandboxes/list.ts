import { z } from "zod";
import { text } from "../text";
import type { Db } from "../db/client";
import { LABEL_KEYS } from "../providers/labels";
import type { SandboxView } from "../providers/types";
import type { CompanyScope } from "../shared/roles";
import { FILTER_MAX } from "../shared/limits";
import { decodeOffset, encodeOffset, offsetCursorInput } from "../runs/cursor";
import type { Observer } from "../services/observer";
import { OWNERSHIP_VERDICTS, type OwnershipVerdict } from "../shared/confirm";
import { accruedCost, ORPHAN_SINCE_RULES, round6 } from "./cost";
import { judgeSandbox, type Judgement } from "./ownership";
import { listOwnSandboxes, loadRecords, type SandboxRecords } from "./records";

/** The orphans page's read model (orphans.list): every orphan of this instance judged, one page sent. */

export const orphanListInput = z.object({
  verdict: z.enum(OWNERSHIP_VERDICTS).optional(),
  companyId: text(FILTER_MAX.companyId).optional(),
  /** Part of a sandbox name or id. */
  search: text(FILTER_MAX.search).optional(),
  /** Where the page starts in the costliest-first order (from the previous page's `nextCursor`). */
  cursor: offsetCursorInput.optional(),
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
  listedAt: z.date(),
  /** One page of the matching orphans, the costliest first. */
  items: z.array(orphanRowSchema),
  /** Where the page starts among all matching orphans (0-based). */
  offset: z.number().int(),
  nextCursor: z.string().nullable(),
  /** All matching orphans, not only this page. */
  totals: z.object({ count: z.number().int(), hourlyCost: z.number(), accruedCost: z.number() }),
  /** All orphans of this instance by verdict, whatever the filters. */
  byVerdict: z.record(z.enum(OWNERSHIP_VERDICTS), z.number().int()),
  /** This instance's sandboxes held by a live run (not orphans, not shown). */
  held: z.number().int(),
});
export type OrphanListOutput = z.infer<typeof orphanListOutput>;

function toRow(s: SandboxView, r: SandboxRecords, j: Extract<Judgement, { held: false }>, now: Date): OrphanRow {
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
    accruedCost: accruedCost(s.hourlyCost, j.orphanSince, now),
    verdict: j.verdict,
    reason: j.reason,
  };
}

/** Every orphan of this instance with its verdict, the costliest first. */
async function judgeAll(db: Db, observer: Observer, scope: CompanyScope, instanceId: string, now: Date) {
  const sandboxes = await listOwnSandboxes(observer, scope, instanceId, now);
  const records = await loadRecords(db, instanceId, sandboxes);
  let held = 0;
  const rows: OrphanRow[] = [];
  for (const s of sandboxes) {
    const r = records.get(s.id)!;
    const j = judgeSandbox(observer, instanceId, s, r, now);
    if (j.held) held += 1;
    else rows.push(toRow(s, r, j, now));
  }
  rows.sort((a, b) => b.accruedCost - a.accruedCost || b.hourlyCost - a.hourlyCost || a.name.localeCompare(b.name));
  return { rows, held };
}

/** Every sandbox of this instance by id: an orphan's row, or why it is held. */
export async function judgeAllWithHeld(db: Db, observer: Observer, scope: CompanyScope, instanceId: string, now: Date) {
  const sandboxes = await listOwnSandboxes(observer, scope, instanceId, now);
  const records = await loadRecords(db, instanceId, sandboxes);
  const rows = new Map<string, OrphanRow>();
  const held = new Map<string, string>();
  for (const s of sandboxes) {
    const r = records.get(s.id)!;
    const j = judgeSandbox(observer, instanceId, s, r, now);
    if (j.held) held.set(s.id, `not an orphan: ${j.reason}`);
    else rows.set(s.id, toRow(s, r, j, now));
  }
  return { rows, held };
}

export async function listOrphans(db: Db, observer: Observer, scope: CompanyScope, instanceId: string, raw: OrphanListInput, now = new Date()): Promise<OrphanListOutput> {
  const input = orphanListInput.parse(raw);
  const page = input.cursor ? decodeOffset(input.cursor) : null;
  // A later page is judged as of its first page's moment (see OffsetCursor).
  const at = page?.at ?? now;
  const { rows, held } = await judgeAll(db, observer, scope, instanceId, at);
  const byVerdict = Object.fromEntries(OWNERSHIP_VERDICTS.map((v) => [v, 0])) as Record<OwnershipVerdict, number>;
  for (const r of rows) byVerdict[r.verdict] += 1;
  const search = input.search?.toLowerCase();
  const items = rows.filter(
    (r) =>
      (!input.verdict || r.verdict === input.verdict) &&
      (!input.companyId || r.companyId === input.companyId) &&
      (!search || r.name.toLowerCase().includes(search) || r.id.toLowerCase().includes(search)),
  );
  // The provider is listed whole to judge every sandbox; only one page travels to the browser.
  const offset = Math.min(page?.offset ?? 0, items.length);
  const end = offset + input.pageSize;
  return {
    instanceId,
    listedAt: at,
    items: items.slice(offset, end),
    offset,
    nextCursor: end < items.length ? encodeOffset({ offset: end, at }) : null,
    totals: {
      count: items.length,
      hourlyCost: round6(items.reduce((n, r) => n + r.hourlyCost, 0)),
      accruedCost: round6(items.reduce((n, r) => n + r.accruedCost, 0)),
    },
    byVerdict,
    held,
  };
}
