import crypto from "node:crypto";
import { uuidSchema } from "../lib/ids";
import { z } from "zod";
import { text } from "../text";
import { writeAudit, type Actor } from "../audit/write";
import type { Db } from "../db/client";
import { ProviderError } from "../providers/errors";
import { normaliseLabels } from "../providers/labels";
import type { SandboxView } from "../providers/types";
import { inScope, type CompanyScope } from "../shared/roles";
import type { Observer } from "../services/observer";
import { confirmWord, OWNERSHIP_VERDICTS } from "../shared/confirm";
import { accruedCost } from "./cost";
import { judgeSandbox } from "./ownership";
import { loadRecords } from "./records";

/** orphans.reclaim's input and answer, and its dry run: the plan the real reclaim (reclaim.ts) carries out. */

/** How long a dry run stays good for the real reclaim. */
export const PLAN_TTL_MS = 15 * 60_000;

export const PLAN_ACTION = "orphans.reclaim_preview";
export const RECLAIM_ACTION = "orphans.reclaim";

export const reclaimInput = z
  .object({
    dryRun: z.boolean(),
    sandboxIds: z
      .array(text(200))
      .min(1, "choose at least one sandbox")
      .max(100, "at most 100 sandboxes at once")
      .refine((ids) => new Set(ids).size === ids.length, "lists a sandbox twice"),
    /** The real reclaim names the dry run it carries out (its `planId`). */
    planId: uuidSchema.optional(),
    /** The real reclaim needs `confirmWord(sandboxIds.length)` typed by the operator. */
    confirm: text(80).optional(),
  })
  .superRefine((v, ctx) => {
    if (v.dryRun) return;
    if (!v.planId) ctx.addIssue({ code: "custom", path: ["planId"], message: "run the dry run first and pass its planId" });
    const word = confirmWord(v.sandboxIds.length);
    if (v.confirm?.trim() !== word) {
      ctx.addIssue({ code: "custom", path: ["confirm"], message: `type "${word}" to destroy ${v.sandboxIds.length} sandbox${v.sandboxIds.length === 1 ? "" : "es"}` });
    }
  });
export type ReclaimInput = z.input<typeof reclaimInput>;

export const RECLAIM_OUTCOMES = ["would_destroy", "refused", "destroyed", "already_gone", "failed"] as const;

export const reclaimResultSchema = z.object({
  sandboxId: z.string(),
  name: z.string().nullable(),
  companyId: z.string().nullable(),
  verdict: z.enum(OWNERSHIP_VERDICTS).nullable(),
  outcome: z.enum(RECLAIM_OUTCOMES),
  reason: z.string(),
  hourlyCost: z.number().nullable(),
  accruedCost: z.number().nullable(),
  leaseId: z.string().nullable(),
});
export type ReclaimResult = z.infer<typeof reclaimResultSchema>;

export const reclaimOutput = z.object({
  dryRun: z.boolean(),
  planId: z.string(),
  instanceId: z.string(),
  at: z.date(),
  results: z.array(reclaimResultSchema),
  /** Dry run: the words to type to destroy the sandboxes it would destroy. */
  confirmWord: z.string().nullable(),
  counts: z.record(z.enum(RECLAIM_OUTCOMES), z.number().int()),
});
export type ReclaimOutput = z.infer<typeof reclaimOutput>;

export const planSchema = z.object({
  instanceId: z.string(),
  at: z.string(),
  destroy: z.array(z.object({ sandboxId: z.string(), name: z.string(), companyId: z.string() })),
});

export function counts(results: ReclaimResult[]) {
  const c = Object.fromEntries(RECLAIM_OUTCOMES.map((o) => [o, 0])) as Record<(typeof RECLAIM_OUTCOMES)[number], number>;
  for (const r of results) c[r.outcome] += 1;
  return c;
}

export const NOT_LISTED = "not among this instance's sandboxes: it is gone, or it belongs to another instance; nothing was done";

/** Provider reads a dry run makes at once (it names at most 100 sandboxes). */
const READS_AT_ONCE = 8;

/**
 * The chosen sandboxes as the provider has them now, by id: only this instance's, in the
 * person's companies, not destroyed (the rest are absent from the map). Never the inventory.
 */
async function readChosen(observer: Observer, scope: CompanyScope, instanceId: string, ids: readonly string[], now: Date) {
  const found = new Map<string, SandboxView>();
  const unread = new Map<string, string>();
  const queue = [...ids];
  const worker = async () => {
    for (let id = queue.shift(); id !== undefined; id = queue.shift()) {
      let s: SandboxView | null;
      try {
        s = await observer.getById(id, { now });
      } catch (err) {
        if (!ProviderError.is(err)) throw err;
        unread.set(id, `the provider could not be asked for it (${err.message}); nothing was done`);
        continue;
      }
      if (!s || s.id !== id || s.state === "destroyed" || s.state === "destroying") continue;
      const labels = normaliseLabels(s.labels);
      if (labels.instance !== instanceId || (!scope.all && !inScope(scope, labels.company))) continue;
      found.set(id, s);
    }
  };
  await Promise.all(Array.from({ length: Math.min(READS_AT_ONCE, ids.length) }, worker));
  return { found, unread };
}

/**
 * Reclaim, dry run: what a real reclaim of these sandboxes would destroy, and what it
 * refuses and why. Each sandbox is read from the provider again and judged now (never from
 * the page's inventory). Touches nothing but the audit log, where the plan is kept (as the
 * dry run's audit entry) for the real reclaim to carry out.
 */
export async function previewReclaim(db: Db, observer: Observer, scope: CompanyScope, instanceId: string, actor: Actor, input: z.infer<typeof reclaimInput>, now = new Date()): Promise<ReclaimOutput> {
  const { found: chosen, unread } = await readChosen(observer, scope, instanceId, input.sandboxIds, now);
  const records = await loadRecords(db, instanceId, [...chosen.values()]);
  const results: ReclaimResult[] = input.sandboxIds.map((id) => {
    const s = chosen.get(id);
    const none = { sandboxId: id, name: null, companyId: null, verdict: null, outcome: "refused" as const, hourlyCost: null, accruedCost: null, leaseId: null };
    if (!s) return { ...none, reason: unread.get(id) ?? NOT_LISTED };
    const j = judgeSandbox(observer, instanceId, s, records.get(id)!, now);
    if (j.held) return { ...none, reason: `not an orphan: ${j.reason}` };
    const ok = j.verdict === "reclaimable";
    return {
      sandboxId: id,
      name: s.name,
      companyId: normaliseLabels(s.labels).company ?? null,
      verdict: j.verdict,
      outcome: ok ? "would_destroy" : "refused",
      reason: ok ? j.reason : `${j.verdict.replace("_", " ")}: ${j.reason}`,
      hourlyCost: s.hourlyCost,
      accruedCost: accruedCost(s.hourlyCost, j.orphanSince, now),
      leaseId: null,
    };
  });
  const planId = crypto.randomUUID();
  const destroy = results.filter((r) => r.outcome === "would_destroy").map((r) => ({ sandboxId: r.sandboxId, name: r.name!, companyId: r.companyId! }));
  const plan: z.infer<typeof planSchema> = { instanceId, at: now.toISOString(), destroy };
  await writeAudit(db, actor, {
    action: PLAN_ACTION,
    targetType: "reclaim_plan",
    targetId: planId,
    input,
    outcome: "ok",
    detail: { plan, results: results.map((r) => ({ sandboxId: r.sandboxId, outcome: r.outcome, reason: r.reason })) },
  });
  return { dryRun: true, planId, instanceId, at: now, results, confirmWord: destroy.length ? confirmWord(destroy.length) : null, counts: counts(results) };
}
