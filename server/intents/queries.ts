import { z } from "zod";
import { text } from "../text";
import { IntentStatus, Prisma, RunStatus, type Db, type SandboxCreationIntent } from "../db/client";
import { asIdentity, processJudgementSchema, type PartialIdentity, type ProcessJudgement } from "../engine";
import { UUID_PATTERN } from "../lib/ids";
import type { Observer } from "../services/observer";
import { cappedTotal, COUNT_CAP, cursorInput, decodeCursor, pageOf } from "../runs/cursor";
import { allOf, likeContains, scopeSql } from "../runs/sql";
import type { CompanyScope } from "../shared/roles";
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
  /** Statuses whose count reached the cap: show them as "10,000+" (none since the counts come from `intent_rollups`; kept for clients). */
  byStatusCapped: z.array(z.enum(IntentStatus)),
});
export type IntentListOutput = z.infer<typeof intentListOutput>;


/** An intent as the page reads it: every column (the sweep's judgement takes the whole row), its lease and its run. */
type IntentPageRow = SandboxCreationIntent & { leaseId: string | null; runStatus: RunStatus | null; runFound: string | null };

const INTENT_COLUMNS = Prisma.sql`operation_id AS id, instance_id AS "instanceId", company_id AS "companyId", run_id AS "runId", creation_name AS "creationName",
  labels, creator_boot_id AS "creatorBootId", creator, status, attempts, last_inspection AS "lastInspection", last_inspected_at AS "lastInspectedAt",
  created_at AS "createdAt", settle_deadline AS "settleDeadline", next_attempt_at AS "nextAttemptAt", resolved_at AS "resolvedAt", updated_at AS "updatedAt"`;

/** Intents of this instance counted up to the cap, in the order an index serves `where`. */
function cappedCount(where: Prisma.Sql, order: Prisma.Sql): Prisma.Sql {
  return Prisma.sql`(SELECT count(*) FROM (SELECT 1 FROM sandbox_creation_intents WHERE ${where} ORDER BY ${order} LIMIT ${COUNT_CAP + 1}) AS capped)`;
}

const capped = (n: bigint | null | undefined) => {
  const v = Number(n ?? 0);
  return v > COUNT_CAP ? { total: COUNT_CAP, totalCapped: true } : { total: v, totalCapped: false };
};

/**
 * `observer` judges creators with this process's identity and a probe of its host, so a
 * creator on another host is `unknown (foreign_pid_space)`.
 *
 * One statement (two when the page is empty): the page with its lease and its run, the total
 * and each status's count as uncorrelated scalar subqueries beside it — one round trip. The
 * counts are sums over `intent_rollups` (exact, a few rows); a search's total is counted on
 * the intents themselves, up to the cap.
 */
export async function listIntents(db: Db, observer: Observer, scope: CompanyScope, instanceId: string, raw: IntentListInput, now = new Date()): Promise<IntentListOutput> {
  const input = intentListInput.parse(raw);
  const mine = [Prisma.sql`instance_id = ${instanceId}`, ...scopeSql(scope)];
  const and = [...mine];
  if (input.status !== "all") and.push(Prisma.sql`status = ${input.status}::"IntentStatus"`);
  if (input.companyId) and.push(Prisma.sql`company_id = ${input.companyId}`);
  if (input.search) {
    const like = likeContains(input.search);
    and.push(Prisma.sql`(operation_id ILIKE ${like} OR creation_name ILIKE ${like} OR run_id ILIKE ${like})`);
  }
  const k = input.cursor ? decodeCursor(input.cursor) : null;
  const after = k ? [Prisma.sql`(created_at, operation_id) < (${k.createdAt}::timestamptz, ${k.id})`] : [];
  const statuses = Object.values(IntentStatus);
  // Counts from `intent_rollups` (a trigger keeps them with every change): a few rows, however
  // many intents the instance ever made. Only a search counts intents themselves, up to the cap.
  const rolled = (where: Prisma.Sql[]) => Prisma.sql`(SELECT coalesce(sum(n), 0)::bigint FROM intent_rollups WHERE ${allOf(where)})`;
  const perStatus = statuses.map((status) => Prisma.sql`${rolled([...mine, Prisma.sql`status = ${status}::"IntentStatus"`])} AS ${Prisma.raw(`"n_${status}"`)}`);
  const total = input.search ? cappedCount(allOf(and), Prisma.sql`created_at DESC, operation_id DESC`) : rolled(and);
  const counted = Prisma.sql`${total} AS total, ${Prisma.join(perStatus)}`;
  // The counts are uncorrelated scalar subqueries in the page's select list: InitPlans, evaluated once.
  const rows = await db.$queryRaw<(IntentPageRow & Record<string, bigint>)[]>`
    SELECT ${counted}, page.*, l.id AS "leaseId", r.id::text AS "runFound", r.status AS "runStatus"
    FROM (
      SELECT ${INTENT_COLUMNS} FROM sandbox_creation_intents WHERE ${allOf([...and, ...after])}
      ORDER BY created_at DESC, operation_id DESC LIMIT ${input.pageSize + 1}
    ) AS page
    LEFT JOIN environment_leases l ON l.intent_id = page.id
    -- An intent's run id is text and may name no run (probe acquires): only a uuid is looked up.
    LEFT JOIN runs r ON r.id = (CASE WHEN page."runId" ~* ${UUID_PATTERN.source} THEN page."runId"::uuid END) AND r.id::text = page."runId"
    ORDER BY page."createdAt" DESC, page.id DESC`;
  // An empty page carries no counts: ask for them alone.
  const first = rows[0] ?? (await db.$queryRaw<Record<string, bigint>[]>`SELECT ${counted}`)[0];
  const page = pageOf(rows, input.pageSize);
  // Rolled-up counts are exact; only a search's total stops at the cap.
  const counts = statuses.map((status) => ({ status, total: Number(first?.[`n_${status}`] ?? 0), totalCapped: false }));
  const byStatus = Object.fromEntries(counts.map((g) => [g.status, g.total])) as Record<IntentStatus, number>;
  const byStatusCapped = counts.filter((g) => g.totalCapped).map((g) => g.status);

  return {
    instanceId,
    items: page.items.map(({ leaseId, runFound, runStatus, ...i }) => {
      const creator = asIdentity(i.creator);
      const pending = i.status === "pending" ? observer.judgePendingIntent(i, leaseId !== null, now) : null;
      return {
        id: i.id,
        status: i.status,
        companyId: i.companyId,
        creationName: i.creationName,
        runId: i.runId,
        run: runFound && runStatus ? { id: runFound, status: runStatus } : null,
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
        leaseId,
      };
    }),
    nextCursor: page.nextCursor,
    ...(input.search ? capped(first?.total) : { total: Number(first?.total ?? 0), totalCapped: false }),
    byStatus,
    byStatusCapped,
  };
}

function creatorVerdict(observer: Observer, creator: PartialIdentity | null): ProcessJudgement {
  const verdict = observer.judgeExit(creator);
  if (verdict.kind !== "process_exit") throw new Error(`judgeExit answered ${verdict.kind}`);
  return { verdict: verdict.verdict, reason: verdict.reason };
}
