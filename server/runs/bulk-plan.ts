import { z } from "zod";
import { Prisma, readRows, RunStatus, type Db } from "../db/client";
import { AppError } from "../errors";
import { uuidSchema } from "../lib/ids";
import { BULK_PLAN_KINDS, BULK_RESULTS } from "../shared/bulk";
import { inScope, type CompanyScope } from "../shared/roles";
import { text } from "../text";

/**
 * A bulk plan (docs/rules.md §2.11) as every reader sees it: the preview's answer, the
 * confirmation's, and `plans.get` share this one shape. The preview is `bulk-preview.ts`,
 * the confirmation `bulk-confirm.ts`.
 */

export const bulkPlanItemSchema = z.object({
  runId: z.string(),
  companyId: z.string(),
  taskId: z.string(),
  failureCode: z.string().nullable(),
  /** The run's status now (not at the preview). */
  status: z.enum(RunStatus),
  position: z.number().int(),
  /** The preview's admission; a refused run is never carried out. */
  admitted: z.boolean(),
  reason: z.string().nullable(),
  refusal: z.string().nullable(),
  /** What the confirmation did (null: not yet, or not admitted). */
  result: z.enum(BULK_RESULTS).nullable(),
  resultReason: z.string().nullable(),
  resultDetail: z.string().nullable(),
  successorId: z.string().nullable(),
  /**
   * A cancelled run's sandbox teardown, which runs after the run was cancelled and recorded:
   * `pending`, then `done` or `failed: …` (the sweep tears down what failed). Null: nothing to tear down.
   */
  teardown: z.string().nullable(),
  doneAt: z.date().nullable(),
});
export type BulkPlanItem = z.infer<typeof bulkPlanItemSchema>;

export const bulkPlanSchema = z.object({
  id: z.string(),
  kind: z.enum(BULK_PLAN_KINDS),
  /** What named the set, as the preview read it (the runs list's filter shape). */
  selector: z.record(z.string(), z.unknown()),
  confirmWord: z.string(),
  reason: z.string().nullable(),
  createdBy: z.string(),
  createdAt: z.date(),
  expiresAt: z.date(),
  confirmedAt: z.date().nullable(),
  confirmedBy: z.string().nullable(),
  finishedAt: z.date().nullable(),
  total: z.number().int(),
  admitted: z.number().int(),
  /** Counts of the items by what happened to them; `pending`: admitted, not done yet. */
  counts: z.object({
    refusedAtPreview: z.number().int(),
    pending: z.number().int(),
    retried: z.number().int(),
    cancelled: z.number().int(),
    refused: z.number().int(),
    failed: z.number().int(),
  }),
  items: z.array(bulkPlanItemSchema),
});
export type BulkPlan = z.infer<typeof bulkPlanSchema>;

export const bulkPlanIdInput = z.object({ planId: uuidSchema });
export const bulkConfirmInput = z.object({ planId: uuidSchema, confirm: text(80) });
export type BulkConfirmInput = z.infer<typeof bulkConfirmInput>;

type ItemRow = Omit<BulkPlanItem, "result"> & { result: string | null };

/** The plan and its items in preview order, each with its run as it is now; NOT_FOUND for another instance's plan or none. */
export async function readBulkPlan(db: Db | Prisma.TransactionClient, instanceId: string, planId: string): Promise<BulkPlan> {
  const plan = await db.bulkPlan.findFirst({ where: { id: planId, instanceId } });
  if (!plan) throw new AppError("NOT_FOUND", `no bulk plan ${planId}: preview the set first`);
  const rows = await readRows<ItemRow>(
    db,
    Prisma.sql`SELECT i.run_id AS "runId", r.company_id AS "companyId", r.task_id AS "taskId", r.failure_code AS "failureCode", r.status::text AS status,
      i.position, i.admitted, i.reason, i.refusal, i.result, i.result_reason AS "resultReason", i.result_detail AS "resultDetail",
      i.successor_id AS "successorId", i.teardown, i.done_at AS "doneAt"
    FROM bulk_plan_items i JOIN runs r ON r.id = i.run_id WHERE i.plan_id = ${planId}::uuid ORDER BY i.position`,
  );
  const items = rows.map((r) => ({ ...r, result: BULK_RESULTS.find((x) => x === r.result) ?? null }));
  const counts: BulkPlan["counts"] = { refusedAtPreview: 0, pending: 0, retried: 0, cancelled: 0, refused: 0, failed: 0 };
  for (const i of items) {
    if (!i.admitted) counts.refusedAtPreview++;
    else if (i.result === null) counts.pending++;
    else counts[i.result]++;
  }
  return {
    id: plan.id,
    kind: plan.kind,
    selector: (plan.selector ?? {}) as Record<string, unknown>,
    confirmWord: plan.confirmWord,
    reason: plan.reason,
    createdBy: plan.createdBy,
    createdAt: plan.createdAt,
    expiresAt: plan.expiresAt,
    confirmedAt: plan.confirmedAt,
    confirmedBy: plan.confirmedBy,
    finishedAt: plan.finishedAt,
    total: plan.total,
    admitted: plan.admitted,
    counts,
    items,
  };
}

/** `plans.get`: the plan when every run of it is in the person's companies; otherwise it reads as one that does not exist. */
export async function getBulkPlan(db: Db, instanceId: string, scope: CompanyScope, planId: string): Promise<BulkPlan> {
  const plan = await readBulkPlan(db, instanceId, planId);
  if (!plan.items.every((i) => inScope(scope, i.companyId))) throw new AppError("NOT_FOUND", `no bulk plan ${planId}: preview the set first`);
  return plan;
}
