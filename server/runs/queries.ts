import { z } from "zod";
import { dateInput, text } from "../text";
import { ExecutionTarget, OutcomeClass, Prisma, readRows, RunStatus, type Db } from "../db/client";
import { describeFailure, failureDescriptionSchema } from "../engine";
import { cappedTotal, COUNT_CAP, cursorInput, decodeCursor, pageOf } from "./cursor";
import { companyWhere, type CompanyScope } from "../shared/roles";
import { FILTER_MAX } from "../shared/limits";
import { isUuid } from "../lib/ids";
import { allOf, likeContains, scopeSql } from "./sql";

/**
 * Read models of runs for the dashboard: the filtered, keyset-paged list, failures grouped
 * by code, and the filter facets. Failure wording always comes from the catalogue.
 */

export const TIME_RANGES = ["1h", "24h", "7d", "30d"] as const;
export type TimeRange = (typeof TIME_RANGES)[number];
const RANGE_MS: Record<TimeRange, number> = { "1h": 3600_000, "24h": 86_400_000, "7d": 7 * 86_400_000, "30d": 30 * 86_400_000 };


/** Filters shared by the list and the failure groups. */
export const runFilterShape = {
  status: z.enum(RunStatus).optional(),
  outcome: z.enum(OutcomeClass).optional(),
  failureCode: text(FILTER_MAX.failureCode).optional(),
  companyId: text(FILTER_MAX.companyId).optional(),
  provider: text(FILTER_MAX.provider).optional(),
  target: z.enum(ExecutionTarget).optional(),
  /** Created within the last hour / day / week / month, measured when the query runs. */
  range: z.enum(TIME_RANGES).optional(),
  createdFrom: dateInput.optional(),
  createdTo: dateInput.optional(),
  /** A whole run id, or part of a task id. */
  search: text(FILTER_MAX.search).optional(),
};

export const fromBeforeTo = (v: { createdFrom?: Date | undefined; createdTo?: Date | undefined }) => !v.createdFrom || !v.createdTo || v.createdFrom <= v.createdTo;

export const runFilterInput = z.object(runFilterShape).refine(fromBeforeTo, { path: ["createdTo"], message: "must not be before createdFrom" });
export type RunFilter = z.infer<typeof runFilterInput>;

export const runListInput = z
  .object({ ...runFilterShape, cursor: cursorInput.optional(), pageSize: z.number().int().min(5).max(100).default(25) })
  .refine(fromBeforeTo, { path: ["createdTo"], message: "must not be before createdFrom" });
export type RunListInput = z.input<typeof runListInput>;


/** The filters that are plain column equalities, shared by the runs and their rollup. */
function equalities(f: RunFilter) {
  return [
    f.status ? { status: f.status } : null,
    f.outcome ? { outcome: f.outcome } : null,
    f.failureCode ? { failureCode: f.failureCode } : null,
    f.companyId ? { companyId: f.companyId } : null,
    f.provider ? { provider: f.provider } : null,
    f.target ? { target: f.target } : null,
  ].filter((x) => x !== null);
}

export function runWhere(f: RunFilter, now: Date): Prisma.RunWhereInput {
  const and: Prisma.RunWhereInput[] = equalities(f);
  if (f.range) and.push({ createdAt: { gte: new Date(now.getTime() - RANGE_MS[f.range]) } });
  if (f.createdFrom) and.push({ createdAt: { gte: f.createdFrom } });
  if (f.createdTo) and.push({ createdAt: { lte: f.createdTo } });
  if (f.search) {
    // A whole run id is a primary-key lookup; other text is a task search (trigram index).
    and.push(isUuid(f.search) ? { id: f.search.toLowerCase() } : { taskId: { contains: f.search, mode: "insensitive" } });
  }
  return and.length ? { AND: and } : {};
}

export const runRowSchema = z.object({
  id: z.string(),
  companyId: z.string(),
  taskId: z.string(),
  agent: z.string(),
  provider: z.string(),
  target: z.enum(ExecutionTarget),
  sandboxMode: z.string(),
  status: z.enum(RunStatus),
  outcome: z.enum(OutcomeClass).nullable(),
  failureCode: z.string().nullable(),
  /** The catalogue's plain sentence for the code; null without a code. */
  failureMessage: z.string().nullable(),
  owner: z.string(),
  canRetry: z.boolean(),
  providerAttempts: z.number().int(),
  maxProviderAttempts: z.number().int(),
  restarts: z.number().int(),
  previousRunId: z.string().nullable(),
  createdAt: z.date(),
  finishedAt: z.date().nullable(),
});
export type RunRow = z.infer<typeof runRowSchema>;

export const runListOutput = z.object({
  items: z.array(runRowSchema),
  nextCursor: z.string().nullable(),
});
export type RunListOutput = z.infer<typeof runListOutput>;

/** Runs matching the filters, over all pages (exact from the rollup for column filters; capped for a time range, dates or a search). */
export const runCountOutput = z.object(cappedTotal);
export type RunCountOutput = z.infer<typeof runCountOutput>;

/** The page's columns under the row's field names (the `pg` types are the row's: uuid and enums as text, timestamptz as Date). */
const ROW_COLUMNS = Prisma.sql`id, company_id AS "companyId", task_id AS "taskId", agent, provider, target, sandbox_mode AS "sandboxMode", status, outcome,
  failure_code AS "failureCode", owner, can_retry AS "canRetry", provider_attempts AS "providerAttempts", max_provider_attempts AS "maxProviderAttempts",
  restarts, previous_run_id AS "previousRunId", created_at AS "createdAt", finished_at AS "finishedAt"`;

type PageRow = Omit<RunRow, "failureMessage">;

/**
 * The column equalities as SQL on `runs` or on `run_rollups` (whose outcome is text, '' for
 * none). Every value is a bound parameter; the casts let PostgreSQL match the enum indexes.
 */
function equalitySql(f: RunFilter, table: "runs" | "rollups"): Prisma.Sql[] {
  return [
    f.status ? Prisma.sql`status = ${f.status}::"RunStatus"` : null,
    f.outcome ? (table === "runs" ? Prisma.sql`outcome = ${f.outcome}::"OutcomeClass"` : Prisma.sql`outcome = ${f.outcome}`) : null,
    f.failureCode ? Prisma.sql`failure_code = ${f.failureCode}` : null,
    f.companyId ? Prisma.sql`company_id = ${f.companyId}` : null,
    f.provider ? Prisma.sql`provider = ${f.provider}` : null,
    f.target ? Prisma.sql`target = ${f.target}::"ExecutionTarget"` : null,
  ].filter((x) => x !== null);
}

/** `runWhere` as SQL on `runs`, scope included (the list, its count, and a bulk plan's set, the stuck runs). */
export function runConditions(f: RunFilter, scope: CompanyScope, now: Date): Prisma.Sql[] {
  const and = [...equalitySql(f, "runs"), ...scopeSql(scope)];
  if (f.range) and.push(Prisma.sql`created_at >= ${new Date(now.getTime() - RANGE_MS[f.range])}::timestamptz`);
  if (f.createdFrom) and.push(Prisma.sql`created_at >= ${f.createdFrom}::timestamptz`);
  if (f.createdTo) and.push(Prisma.sql`created_at <= ${f.createdTo}::timestamptz`);
  if (f.search) {
    // A whole run id is a primary-key lookup; other text is a task search (trigram index).
    and.push(isUuid(f.search) ? Prisma.sql`id = ${f.search.toLowerCase()}::uuid` : Prisma.sql`task_id ILIKE ${likeContains(f.search)}`);
  }
  return and;
}

/**
 * The page alone, one statement (docs/decisions/0003-cost-at-scale.md; the gap to the raw query was a fixed cost per
 * request — Prisma's findMany compiled and interpreted each time, and then the total computed
 * with every page; the total is `countRuns`, its own request that paging does not repeat).
 * The page reads the (…, created_at, id) index from the cursor on, the row-value
 * `(created_at, id) < (t, id)` being where the index range starts.
 */
export async function listRuns(db: Db, scope: CompanyScope, raw: RunListInput, now = new Date()): Promise<RunListOutput> {
  const input = runListInput.parse(raw);
  const conditions = runConditions(input, scope, now);
  const k = input.cursor ? decodeCursor(input.cursor) : null;
  const after = k ? [Prisma.sql`(created_at, id) < (${k.createdAt}::timestamptz, ${k.id}::uuid)`] : [];
  const rows = await readRows<PageRow>(
    db,
    Prisma.sql`SELECT ${ROW_COLUMNS} FROM runs WHERE ${allOf([...conditions, ...after])}
    ORDER BY created_at DESC, id DESC LIMIT ${input.pageSize + 1}`,
  );
  const page = pageOf(rows, input.pageSize);
  return {
    items: page.items.map((r) => ({ ...r, failureMessage: describeFailure(r.failureCode)?.message ?? null })),
    nextCursor: page.nextCursor,
  };
}

/**
 * How many runs match the filters, one statement: the rollup's sum when the filters are its
 * columns (exact), otherwise the runs counted up to the cap in the page's order (so
 * PostgreSQL walks the list's own index and never sorts or counts every match).
 */
export async function countRuns(db: Db, scope: CompanyScope, raw: z.input<typeof runFilterInput>, now = new Date()): Promise<RunCountOutput> {
  const input = runFilterInput.parse(raw);
  const rollup = rollupSql(input, scope);
  if (rollup) {
    // float8: a number in `pg`'s types, exact far past any count of runs (int8 would be text).
    const [row] = await readRows<{ total: number }>(db, Prisma.sql`SELECT coalesce(sum(n), 0)::float8 AS total FROM run_rollups WHERE ${rollup}`);
    return { total: row?.total ?? 0, totalCapped: false };
  }
  const [row] = await readRows<{ total: number }>(
    db,
    Prisma.sql`SELECT count(*)::int AS total FROM (SELECT 1 FROM runs WHERE ${allOf(runConditions(input, scope, now))}
    ORDER BY created_at DESC, id DESC LIMIT ${COUNT_CAP + 1}) AS capped`,
  );
  const n = row?.total ?? 0;
  return n > COUNT_CAP ? { total: COUNT_CAP, totalCapped: true } : { total: n, totalCapped: false };
}

export const failureGroupsOutput = z.array(
  failureDescriptionSchema.extend({
    count: z.number().int(),
    /** How many of them still wait for someone (terminal failures without a successor). */
    open: z.number().int(),
    lastAt: z.date(),
  }),
);
export type FailureGroups = z.infer<typeof failureGroupsOutput>;

/**
 * The rollup answers when the filters are its own columns; a time range, dates or a search
 * need the runs themselves (bounded by the created_at index), so those fall back to them.
 */
function rollupWhere(f: RunFilter, scope: CompanyScope): Prisma.RunRollupWhereInput | null {
  if (rollupMisses(f)) return null;
  // A group's count is the sum of its rows (deltas until compacted): no row is filtered by its own n.
  return { AND: [companyWhere(scope), ...equalities(f)] };
}

function rollupMisses(f: RunFilter): boolean {
  return Boolean(f.range || f.createdFrom || f.createdTo || f.search);
}

/** `rollupWhere` as SQL on `run_rollups`. */
function rollupSql(f: RunFilter, scope: CompanyScope): Prisma.Sql | null {
  if (rollupMisses(f)) return null;
  return allOf([...scopeSql(scope), ...equalitySql(f, "rollups")]);
}

interface CodeCount {
  code: string;
  count: number;
  open: number;
  lastAt: Date;
}

async function countByCode(db: Db, scope: CompanyScope, input: RunFilter, now: Date): Promise<CodeCount[]> {
  const rollup = rollupWhere({ ...input, failureCode: undefined }, scope);
  if (rollup) {
    const rows = await db.runRollup.groupBy({ by: ["failureCode", "open"], where: { AND: [rollup, { failureCode: { not: "" } }] }, _sum: { n: true }, _max: { lastAt: true } });
    const byCode = new Map<string, CodeCount>();
    for (const r of rows) {
      const n = Number(r._sum.n ?? 0);
      const lastAt = r._max.lastAt;
      if (n <= 0 || !lastAt) continue;
      const c = byCode.get(r.failureCode) ?? { code: r.failureCode, count: 0, open: 0, lastAt };
      c.count += n;
      if (r.open) c.open += n;
      if (lastAt > c.lastAt) c.lastAt = lastAt;
      byCode.set(r.failureCode, c);
    }
    return [...byCode.values()];
  }
  const where: Prisma.RunWhereInput = { AND: [runWhere({ ...input, failureCode: undefined }, now), { failureCode: { not: null } }, companyWhere(scope)] };
  const [groups, open] = await Promise.all([
    db.run.groupBy({ by: ["failureCode"], where, _count: { _all: true }, _max: { createdAt: true } }),
    db.run.groupBy({ by: ["failureCode"], where: { AND: [where, { status: "failed", nextRun: null }] }, _count: { _all: true } }),
  ]);
  const openBy = new Map(open.map((g) => [g.failureCode, g._count._all]));
  return groups.flatMap((g) => (g.failureCode && g._max.createdAt ? [{ code: g.failureCode, count: g._count._all, open: openBy.get(g.failureCode) ?? 0, lastAt: g._max.createdAt }] : []));
}

/** Runs with a failure code, grouped by it (most frequent first), under the same filters. */
export async function failureGroups(db: Db, scope: CompanyScope, raw: z.input<typeof runFilterInput>, now = new Date()): Promise<FailureGroups> {
  const input = runFilterInput.parse(raw);
  const groups = await countByCode(db, scope, input, now);
  return groups
    .flatMap((g) => {
      const entry = describeFailure(g.code);
      if (!entry) return [];
      return [
        { ...entry, count: g.count, open: g.open, lastAt: g.lastAt },
      ];
    })
    .sort((a, b) => b.count - a.count || a.code.localeCompare(b.code));
}

/** Failed runs that Retry can start again and no Retry has replaced yet, by code (the overview's "waiting for Retry"). */
export async function awaitingRetryByCode(db: Db, scope: CompanyScope): Promise<{ code: string; count: number }[]> {
  const rows = await db.runRollup.groupBy({
    by: ["failureCode"],
    where: { AND: [companyWhere(scope), { status: RunStatus.failed, canRetry: true, open: true, failureCode: { not: "" } }] },
    _sum: { n: true },
  });
  return rows.map((r) => ({ code: r.failureCode, count: Number(r._sum.n ?? 0) })).filter((r) => r.count > 0);
}

export const runStatusCountsOutput = z.object({
  total: z.number().int(),
  byStatus: z.record(z.enum(RunStatus), z.number().int()),
});

/** How many runs of this person's companies are in each status (every status present). */
export async function runStatusCounts(db: Db, scope: CompanyScope): Promise<z.infer<typeof runStatusCountsOutput>> {
  const rows = await db.runRollup.groupBy({ by: ["status"], where: companyWhere(scope), _sum: { n: true } });
  const byStatus = Object.fromEntries(Object.values(RunStatus).map((s) => [s, 0])) as Record<RunStatus, number>;
  let total = 0;
  for (const row of rows) {
    const n = Number(row._sum.n ?? 0);
    byStatus[row.status] = n;
    total += n;
  }
  return { total, byStatus };
}

export const runFacetsOutput = z.object({ companies: z.array(z.string()), providers: z.array(z.string()), failureCodes: z.array(z.string()) });

/** The values the filters can take, for the dropdowns (bounded: this is a hint, not a list). */
export async function runFacets(db: Db, scope: CompanyScope): Promise<z.infer<typeof runFacetsOutput>> {
  const mine = companyWhere(scope);
  // A value with runs: its rows (deltas until compacted) sum past zero.
  const some = { n: { _sum: { gt: 0 } } } as const;
  const [companies, providers, codes] = await Promise.all([
    db.runRollup.groupBy({ by: ["companyId"], where: mine, having: some, orderBy: { companyId: "asc" }, take: 200 }),
    db.runRollup.groupBy({ by: ["provider"], where: mine, having: some, orderBy: { provider: "asc" }, take: 50 }),
    db.runRollup.groupBy({ by: ["failureCode"], where: { AND: [mine, { failureCode: { not: "" } }] }, having: some, orderBy: { failureCode: "asc" }, take: 100 }),
  ]);
  return {
    companies: companies.map((c) => c.companyId),
    providers: providers.map((p) => p.provider),
    failureCodes: codes.map((c) => c.failureCode),
  };
}
