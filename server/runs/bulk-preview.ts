import { z } from "zod";
import { writeAudit, type Actor } from "../audit/write";
import { Prisma, readRows, type Db } from "../db/client";
import { admitCancel, admitRetry, assertNever, LIVE_RUN_STATUSES } from "../engine";
import { AppError } from "../errors";
import { BULK_PLAN_KINDS, BULK_PLAN_MAX_RUNS, BULK_PLAN_TTL_MS, bulkConfirmWord, type BulkPlanKind } from "../shared/bulk";
import type { CompanyScope } from "../shared/roles";
import { text } from "../text";
import { readBulkPlan, type BulkPlan } from "./bulk-plan";
import { fromBeforeTo, runConditions, runFilterShape, type RunFilter } from "./queries";
import { allOf } from "./sql";

/**
 * The preview of bulk Retry or Cancel (docs/rules.md §2.11): the set the runs list's filter
 * names (a failure group is the filter `failureCode`, with a company or not), each run judged
 * by the engine as Retry or Cancel would judge it alone, stored as a plan the confirmation
 * carries out. It touches no run.
 */

const FILTER_KEYS = Object.keys(runFilterShape) as Array<keyof typeof runFilterShape>;

/** The runs list's filter, with at least one of its fields: a plan never names "every run". */
export const bulkSelectorSchema = z
  .object(runFilterShape)
  .refine(fromBeforeTo, { path: ["createdTo"], message: "must not be before createdFrom" })
  .refine((f) => FILTER_KEYS.some((k) => f[k] !== undefined), { message: "name the runs with at least one filter (a failure code, a status, a company, …): a plan never takes every run" });

export const bulkPreviewInput = z.object({
  kind: z.enum(BULK_PLAN_KINDS),
  filter: bulkSelectorSchema,
  /** Cancel's reason, kept on each cancelled run. */
  reason: text(500).optional(),
});
export type BulkPreviewInput = z.input<typeof bulkPreviewInput>;

interface Candidate {
  id: string;
  companyId: string;
  taskId: string;
  status: string;
  outcome: string | null;
  canRetry: boolean;
  failureCode: string | null;
  successorId: string | null;
  cancelledBy: string | null;
  cancelReason: string | null;
}

/** Runs past the bound are counted up to here for the message; beyond it, "more than". */
const COUNT_LIMIT = 100_000;

/**
 * The set a plan of this kind takes. A Retry plan leaves out runs already retried (Retry would
 * only answer their successor), so that old, handled failures do not fill the bound.
 */
function kindConditions(kind: BulkPlanKind): Prisma.Sql[] {
  switch (kind) {
    case "retry":
      return [Prisma.sql`NOT EXISTS (SELECT 1 FROM runs s WHERE s.previous_run_id = runs.id)`];
    case "cancel":
      return [];
    default:
      return assertNever(kind);
  }
}

export async function previewBulkPlan(db: Db, instanceId: string, scope: CompanyScope, actor: Actor, raw: BulkPreviewInput, now = new Date()): Promise<BulkPlan> {
  const input = bulkPreviewInput.parse(raw);
  const filter: RunFilter = input.filter;
  const where = allOf([...runConditions(filter, scope, now), ...kindConditions(input.kind)]);
  const runs = await readRows<Candidate>(
    db,
    Prisma.sql`SELECT id, company_id AS "companyId", task_id AS "taskId", status::text AS status, outcome::text AS outcome, can_retry AS "canRetry",
      failure_code AS "failureCode", (SELECT s.id FROM runs s WHERE s.previous_run_id = runs.id) AS "successorId",
      cancelled_by AS "cancelledBy", cancel_reason AS "cancelReason"
    FROM runs WHERE ${where} ORDER BY created_at, id LIMIT ${BULK_PLAN_MAX_RUNS + 1}`,
  );
  if (runs.length > BULK_PLAN_MAX_RUNS) {
    const [row] = await readRows<{ n: number }>(db, Prisma.sql`SELECT count(*)::int AS n FROM (SELECT 1 FROM runs WHERE ${where} LIMIT ${COUNT_LIMIT + 1}) AS capped`);
    const n = row?.n ?? 0;
    const matched = n > COUNT_LIMIT ? `More than ${COUNT_LIMIT.toLocaleString("en")}` : n.toLocaleString("en");
    throw new AppError("PRECONDITION_FAILED", `${matched} runs match this filter; a plan takes at most ${BULK_PLAN_MAX_RUNS.toLocaleString("en")}. Narrow the filter (a company, a time range, a status) and preview again.`);
  }
  if (runs.length === 0) throw new AppError("PRECONDITION_FAILED", `No run matches this filter${input.kind === "retry" ? " (runs already retried are left out)" : ""}: nothing to ${input.kind}.`);

  const judged = await judgeAll(db, input.kind, runs);
  const admitted = judged.filter((j) => j.admitted).length;
  const planId = await db.$transaction(async (tx) => {
    const plan = await tx.bulkPlan.create({
      data: {
        instanceId,
        kind: input.kind,
        selector: filter as Prisma.InputJsonValue,
        scope: scope as unknown as Prisma.InputJsonValue,
        confirmWord: bulkConfirmWord(input.kind, admitted),
        reason: input.reason ?? null,
        createdBy: actor.id,
        createdRole: actor.role,
        total: runs.length,
        admitted,
        expiresAt: new Date(now.getTime() + BULK_PLAN_TTL_MS),
      },
    });
    await tx.bulkPlanItem.createMany({ data: judged.map((j, position) => ({ planId: plan.id, runId: j.runId, position, admitted: j.admitted, reason: j.reason, refusal: j.refusal })) });
    await writeAudit(tx, actor, {
      action: `run.bulk_${input.kind}_preview`,
      targetType: "bulk_plan",
      targetId: plan.id,
      companyId: singleCompany(runs),
      input: { kind: input.kind, filter, ...(input.reason ? { reason: input.reason } : {}) },
      outcome: "ok",
      detail: { total: runs.length, admitted },
    });
    return plan.id;
  });
  return readBulkPlan(db, instanceId, planId);
}

type Judged = { runId: string; admitted: boolean; reason: string | null; refusal: string | null };

/** Each run judged by the engine on what is committed now: its successor and its task's other live run. */
async function judgeAll(db: Db, kind: BulkPlanKind, runs: Candidate[]): Promise<Judged[]> {
  switch (kind) {
    case "retry": {
      const live = await liveRunsOfTasks(db, runs);
      return runs.map((run) => {
        const other = (live.get(taskKey(run)) ?? []).find((l) => l.id !== run.id) ?? null;
        const admission = admitRetry({ run, successorId: run.successorId, otherLiveRun: other });
        switch (admission.verdict) {
          case "admitted":
            return { runId: run.id, admitted: true, reason: null, refusal: null };
          case "existing_successor":
            // Retried between the set's read and this judgement: not this plan's to retry.
            return { runId: run.id, admitted: false, reason: "existing_successor", refusal: `Already retried as run ${admission.successorId}.` };
          case "refused":
            return { runId: run.id, admitted: false, reason: admission.reason, refusal: admission.refusal };
          default:
            return assertNever(admission);
        }
      });
    }
    case "cancel":
      return runs.map((run) => {
        const admission = admitCancel({ run });
        return admission.verdict === "admitted"
          ? { runId: run.id, admitted: true, reason: null, refusal: null }
          : { runId: run.id, admitted: false, reason: admission.reason, refusal: admission.refusal };
      });
    default:
      return assertNever(kind);
  }
}

const taskKey = (r: { companyId: string; taskId: string }) => `${r.companyId}\u0000${r.taskId}`;

/** The live runs of the candidates' tasks, by task, in one statement. */
async function liveRunsOfTasks(db: Db, runs: Candidate[]): Promise<Map<string, Array<{ id: string; status: string }>>> {
  const companies = runs.map((r) => r.companyId);
  const tasks = runs.map((r) => r.taskId);
  const rows = await readRows<{ id: string; status: string; companyId: string; taskId: string }>(
    db,
    Prisma.sql`SELECT r.id, r.status::text AS status, r.company_id AS "companyId", r.task_id AS "taskId"
    FROM runs r JOIN (SELECT DISTINCT * FROM unnest(${companies}::text[], ${tasks}::text[]) AS t(company_id, task_id)) t
      ON r.company_id = t.company_id AND r.task_id = t.task_id
    WHERE r.status IN (${Prisma.join(LIVE_RUN_STATUSES.map((st) => Prisma.sql`${st}::"RunStatus"`))})`,
  );
  const byTask = new Map<string, Array<{ id: string; status: string }>>();
  for (const r of rows) byTask.set(taskKey(r), [...(byTask.get(taskKey(r)) ?? []), { id: r.id, status: r.status }]);
  return byTask;
}

/** The one company of the runs, or null when they span several (the audit entry's company). */
export function singleCompany(runs: ReadonlyArray<{ companyId: string }>): string | null {
  const first = runs[0]?.companyId ?? null;
  return runs.every((r) => r.companyId === first) ? first : null;
}
