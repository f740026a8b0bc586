import { z } from "zod";
import { text } from "../text";
import { IntentStatus, Prisma, RunStatus, type Db } from "../db/client";
import { asIdentity, processJudgementSchema, type PartialIdentity, type ProcessJudgement } from "../engine";
import { isUuid } from "../lib/ids";
import type { Observer } from "../services/observer";
import { afterCursor, cappedTotal, countCapped, cursorInput, PAGE_ORDER, pageOf } from "../runs/cursor";
import { companyWhere, type CompanyScope } from "../shared/roles";
import { FILTER_MAX } from "../shared/limits";
import { describeInspection } from "./inspection";

/**
 * Sandbox-creation intents of this instance for the dashboard, each with the engine's
 * live verdict on its creator (computed now, in this process, from a probe of this host)
 * and, while pending, what the sweep would do with it now before asking the provider.
 */

export const INTENT_STATUS_FILTERS = [...Object.values(IntentStatus), "all"] as const;


export const intentListInput = z.object({
  status: z.enum(INTENT_STATUS_FILTERS).default("pending"),
  companyId: text(FILTER_MAX.companyId).optional(),
  /** Part of an operation id, a creation name or a run id. */
  search: text(FILTER_MAX.search).optional(),
  cursor: cursorInput.optional(),
  pageSize: z.number().int().min(5).max(200).default(50),
});
export type IntentListInput = z.input<typeof intentListInput>;

export const intentRowSchema = z.object({
  id: z.string(),
  status: z.enum(IntentStatus),
  companyId: z.string(),
  creationName: z.string(),
  runId: z.string(),
  /** The run the intent names; null when that id names no run (probe and qualification acquires). */
  run: z.object({ id: z.string(), status: z.enum(RunStatus) }).nullable(),
  createdAt: z.date(),
  ageSeconds: z.number().int(),
  creator: z
    .object({ bootId: z.string().nullable(), pid: z.number().nullable(), startedAt: z.string().nullable(), startTicks: z.number().nullable(), pidSpace: z.string().nullable() })
    .nullable(),
  /** process_exit on the recorded creator, judged now by this process. */
  creatorVerdict: processJudgementSchema,
  /** creation_intent without an inspection: `wait`, `inspect` or `commit`; null unless pending. */
  sweepWould: z.object({ verdict: z.string(), reason: z.string() }).nullable(),
  nextAttemptAt: z.date(),
  settleDeadline: z.date(),
  attempts: z.number().int(),
  lastInspection: z.unknown(),
  /** The last inspection in words (server/intents/inspection.ts); null when never inspected. */
  lastInspectionText: z.string().nullable(),
  lastInspectedAt: z.date().nullable(),
  resolvedAt: z.date().nullable(),
  leaseId: z.string().nullable(),
});
export type IntentRow = z.infer<typeof intentRowSchema>;

export const intentListOutput = z.object({
  instanceId: z.string(),
  items: z.array(intentRowSchema),
  nextCursor: z.string().nullable(),
  ...cappedTotal,
  /** This instance's intents by status (all of them, whatever the filters). */
  byStatus: z.record(z.enum(IntentStatus), z.number().int()),
  /** Statuses whose count reached the cap: show them as "10,000+". */
  byStatusCapped: z.array(z.enum(IntentStatus)),
});
export type IntentListOutput = z.infer<typeof intentListOutput>;


/**
 * `observer` judges creators with this process's identity and a probe of its host, so a
 * creator on another host is `unknown (foreign_pid_space)`.
 */
export async function listIntents(db: Db, observer: Observer, scope: CompanyScope, instanceId: string, raw: IntentListInput, now = new Date()): Promise<IntentListOutput> {
  const input = intentListInput.parse(raw);
  const and: Prisma.SandboxCreationIntentWhereInput[] = [{ instanceId }, companyWhere(scope)];
  if (input.status !== "all") and.push({ status: input.status });
  if (input.companyId) and.push({ companyId: input.companyId });
  if (input.search) {
    const s = input.search;
    and.push({ OR: [{ id: { contains: s, mode: "insensitive" } }, { creationName: { contains: s, mode: "insensitive" } }, { runId: { contains: s, mode: "insensitive" } }] });
  }
  const where: Prisma.SandboxCreationIntentWhereInput = { AND: and };
  const [rows, counted, grouped] = await Promise.all([
    db.sandboxCreationIntent.findMany({ where: { AND: [where, afterCursor(input.cursor)] }, orderBy: PAGE_ORDER, take: input.pageSize + 1, include: { lease: { select: { id: true } } } }),
    countCapped((take) => db.sandboxCreationIntent.count({ where, take, orderBy: PAGE_ORDER })),
    // Per status, each count stops at the cap: no GROUP BY over every intent the instance ever made (issue 13).
    Promise.all(
      Object.values(IntentStatus).map(async (status) => ({
        status,
        ...(await countCapped((take) => db.sandboxCreationIntent.count({ where: { instanceId, status, ...companyWhere(scope) }, take, orderBy: { id: "asc" } }))),
      })),
    ),
  ]);
  const page = pageOf(rows, input.pageSize);
  const runIds = [...new Set(page.items.map((i) => i.runId).filter(isUuid))];
  const runs = runIds.length ? await db.run.findMany({ where: { id: { in: runIds } }, select: { id: true, status: true } }) : [];
  const runById = new Map(runs.map((r) => [r.id, r]));
  const byStatus = Object.fromEntries(grouped.map((g) => [g.status, g.total])) as Record<IntentStatus, number>;
  const byStatusCapped = grouped.filter((g) => g.totalCapped).map((g) => g.status);

  return {
    instanceId,
    items: page.items.map((i) => {
      const creator = asIdentity(i.creator);
      const pending = i.status === "pending" ? observer.judgePendingIntent(i, i.lease !== null, now) : null;
      return {
        id: i.id,
        status: i.status,
        companyId: i.companyId,
        creationName: i.creationName,
        runId: i.runId,
        run: runById.get(i.runId) ?? null,
        createdAt: i.createdAt,
        ageSeconds: Math.max(0, Math.floor((now.getTime() - i.createdAt.getTime()) / 1000)),
        creator: creator
          ? { bootId: creator.bootId ?? null, pid: creator.pid ?? null, startedAt: creator.startedAt ?? null, startTicks: creator.startTicks ?? null, pidSpace: creator.pidSpace ?? null }
          : null,
        creatorVerdict: creatorVerdict(observer, creator),
        sweepWould: pending ? { verdict: pending.verdict, reason: pending.reason } : null,
        nextAttemptAt: i.nextAttemptAt,
        settleDeadline: i.settleDeadline,
        attempts: i.attempts,
        lastInspection: i.lastInspection,
        lastInspectionText: describeInspection(i.lastInspection),
        lastInspectedAt: i.lastInspectedAt,
        resolvedAt: i.resolvedAt,
        leaseId: i.lease?.id ?? null,
      };
    }),
    nextCursor: page.nextCursor,
    ...counted,
    byStatus,
    byStatusCapped,
  };
}

function creatorVerdict(observer: Observer, creator: PartialIdentity | null): ProcessJudgement {
  const verdict = observer.judgeExit(creator);
  if (verdict.kind !== "process_exit") throw new Error(`judgeExit answered ${verdict.kind}`);
  return { verdict: verdict.verdict, reason: verdict.reason };
}
