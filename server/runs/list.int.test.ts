import crypto from "node:crypto";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import type { Prisma } from "../db/client";
import { describeFailure } from "../engine";
import { companyWhere, type CompanyScope } from "../shared/roles";
import { isUuid } from "../lib/ids";
import { withTestDatabase } from "../test/context";
import { PAGE_ORDER } from "./cursor";
import { countRuns, listRuns, runWhere, type RunFilter, type RunListInput, type RunRow } from "./queries";

/**
 * runs.list and runs.count are each one SQL statement built from `Prisma.sql` fragments
 * (docs/decisions/0003-cost-at-scale.md). Over random filter combinations the UI offers, scopes and page sizes, walking
 * every page must give exactly the rows Prisma's own query over the same filters gives, in the
 * same order, each field as stored, and the count must be their exact number — and a
 * company-scoped viewer never sees nor counts another company's run.
 */

const t = withTestDatabase();
const NOW = new Date("2026-11-20T12:00:00.000Z");
const DAY = 86_400_000;
const COMPANIES = ["co-0", "co-1", "co-2", "co-3"] as const;
const STATUSES = ["queued", "starting", "running", "suspended", "succeeded", "failed", "cancelled"] as const;
const CODES = ["native_provider_startup_rejected", "native_session_interrupted", "agent_command_failed"] as const;
/** Task ids where LIKE's wildcards would match more than the characters typed. */
const TASKS = ["task-a_b", "task-a%b", "task-axb", "task-aXb", "deploy-7", "TASK-big"] as const;
const ids: string[] = [];

function pick<T>(xs: readonly T[], i: number): T {
  return xs[i % xs.length] as T;
}

function runData(i: number): Prisma.RunCreateManyInput {
  const status = pick(STATUSES, i * 7 + (i >> 3));
  const code = status === "failed" || (status === "queued" && i % 3 === 0) ? pick(CODES, i >> 1) : null;
  const id = crypto.randomUUID();
  ids.push(id);
  return {
    id,
    instanceId: "inst-l",
    companyId: pick(COMPANIES, i * 3 + (i >> 2)),
    taskId: `${pick(TASKS, i)}-${i}`,
    agent: "a",
    provider: i % 5 < 3 ? "codex" : "claude",
    target: i % 3 ? "remote" : "local",
    sandboxMode: "warm",
    status,
    outcome: status === "failed" ? (i % 4 ? "terminal_failure" : "retryable_failure") : code ? "retryable_failure" : null,
    failureCode: code,
    canRetry: status === "failed" && i % 2 === 0,
    providerAttempts: i % 4,
    restarts: i % 3,
    // Groups of five share a created_at: a page boundary falls between equal keys.
    createdAt: new Date(NOW.getTime() - Math.floor(i / 5) * 0.9 * DAY - (i % 7 === 0 ? 0 : 1000)),
    finishedAt: status === "succeeded" || status === "failed" ? NOW : null,
  };
}

beforeAll(async () => {
  const { db } = t.current;
  await db.instance.create({ data: { id: "inst-l", name: "l" } });
  await db.run.createMany({ data: Array.from({ length: 180 }, (_, i) => runData(i)) });
});

const at = (days: number) => new Date(NOW.getTime() - days * DAY);

const filterArb: fc.Arbitrary<RunFilter> = fc.record(
  {
    status: fc.constantFrom(...STATUSES),
    outcome: fc.constantFrom("retryable_failure" as const, "terminal_failure" as const),
    failureCode: fc.constantFrom(...CODES, "no_such_code"),
    companyId: fc.constantFrom(...COMPANIES, "co-9"),
    provider: fc.constantFrom("codex", "claude"),
    target: fc.constantFrom("local" as const, "remote" as const),
    range: fc.constantFrom("1h" as const, "24h" as const, "7d" as const, "30d" as const),
    createdFrom: fc.integer({ min: 0, max: 200 }).map(at),
    createdTo: fc.integer({ min: 0, max: 200 }).map((d) => at(d / 2)),
    search: fc.constantFrom("a_b", "a%b", "A%", "axb", "deploy", "TASK-", "_", "%", "1", "run", "__EXACT__", "__EXACT_UPPER__", crypto.randomUUID()),
  },
  { requiredKeys: [] },
);

const scopeArb: fc.Arbitrary<CompanyScope> = fc.constantFrom<CompanyScope>(
  { all: true },
  { all: false, companies: ["co-0"] },
  { all: false, companies: ["co-1", "co-3"] },
  { all: false, companies: [] },
);

/** The filters as the list reads them: an exact run id stands for one of the seeded runs. */
function concrete(f: RunFilter, which: number): RunFilter {
  const id = pick(ids, which);
  const search = f.search === "__EXACT__" ? id : f.search === "__EXACT_UPPER__" ? id.toUpperCase() : f.search;
  const out: RunFilter = { ...f, ...(search ? { search } : {}) };
  // createdFrom after createdTo is refused as input; keep the pair in order.
  if (out.createdFrom && out.createdTo && out.createdFrom > out.createdTo) [out.createdFrom, out.createdTo] = [out.createdTo, out.createdFrom];
  return out;
}

/**
 * What Prisma's own query answers for these filters: the rows in page order, as the list
 * shows them. Prisma's `contains` passes `_` and `%` on to LIKE as wildcards (a search for
 * "a_b" found "axb"), so a text search is applied here as the characters typed.
 */
async function expected(f: RunFilter, scope: CompanyScope) {
  const text = f.search && !isUuid(f.search) ? f.search : null;
  const rows = await t.current.db.run.findMany({
    where: { AND: [runWhere(text ? { ...f, search: undefined } : f, NOW), companyWhere(scope)] },
    orderBy: PAGE_ORDER,
    select: {
      id: true, companyId: true, taskId: true, agent: true, provider: true, target: true, sandboxMode: true, status: true, outcome: true,
      failureCode: true, owner: true, canRetry: true, providerAttempts: true, maxProviderAttempts: true, restarts: true, previousRunId: true,
      createdAt: true, finishedAt: true,
    },
  });
  return rows.filter((r) => text === null || containsLiterally(r.taskId, text)).map((r): RunRow => ({ ...r, failureMessage: describeFailure(r.failureCode)?.message ?? null }));
}

/** Runs whose task id contains `s` as typed (case-insensitive), wildcards being characters. */
function containsLiterally(taskId: string, s: string): boolean {
  return taskId.toLowerCase().includes(s.toLowerCase());
}

describe("runs.list and runs.count as one statement each", () => {
  it("pages through exactly Prisma's rows for any filter combination, scope and page size, and counts them exactly", async () => {
    await fc.assert(
      fc.asyncProperty(filterArb, scopeArb, fc.integer({ min: 5, max: 40 }), fc.nat(), async (raw, scope, pageSize, which) => {
        const f = concrete(raw, which);
        const want = await expected(f, scope);
        expect(await countRuns(t.current.db, scope, f, NOW)).toEqual({ total: want.length, totalCapped: false });
        const got: RunRow[] = [];
        let cursor: string | undefined;
        for (let pages = 0; pages < 100; pages++) {
          const page = await listRuns(t.current.db, scope, { ...f, pageSize, ...(cursor ? { cursor } : {}) } satisfies RunListInput, NOW);
          expect(page.items.length).toBeLessThanOrEqual(pageSize);
          got.push(...page.items);
          if (!page.nextCursor) break;
          cursor = page.nextCursor;
        }
        expect(got).toEqual(want);
        if (!scope.all) expect(got.filter((r) => !scope.companies.includes(r.companyId))).toEqual([]);
        if (f.search && !f.search.includes("-") && f.search.length < 30) expect(got.filter((r) => !containsLiterally(r.taskId, f.search ?? ""))).toEqual([]);
      }),
      { numRuns: 120 },
    );
  }, 300_000);

  it("reads `_` and `%` in a search as themselves", async () => {
    const underscore = await listRuns(t.current.db, { all: true }, { search: "a_b", pageSize: 100 }, NOW);
    expect(underscore.items.length).toBeGreaterThan(0);
    expect(underscore.items.every((r) => r.taskId.startsWith("task-a_b-"))).toBe(true);
    const percent = await listRuns(t.current.db, { all: true }, { search: "a%b", pageSize: 100 }, NOW);
    expect(percent.items.length).toBeGreaterThan(0);
    expect(percent.items.every((r) => r.taskId.startsWith("task-a%b-"))).toBe(true);
  });

  it("gives a viewer of no company nothing, and a viewer of one company only its runs, and counts only those", async () => {
    const none = await listRuns(t.current.db, { all: false, companies: [] }, {}, NOW);
    expect(none).toEqual({ items: [], nextCursor: null });
    // Both ways of counting: the rollup (column filters) and the capped count (a time range, a search).
    for (const f of [{}, { status: "failed" as const }, { range: "30d" as const }, { search: "task" }]) {
      expect(await countRuns(t.current.db, { all: false, companies: [] }, f, NOW)).toEqual({ total: 0, totalCapped: false });
    }
    const mine = await listRuns(t.current.db, { all: false, companies: ["co-2"] }, { pageSize: 100 }, NOW);
    expect(mine.items.length).toBeGreaterThan(0);
    expect(mine.items.every((r) => r.companyId === "co-2")).toBe(true);
    const own = await t.current.db.run.count({ where: { companyId: "co-2" } });
    expect(own).toBeLessThan(ids.length);
    expect(await countRuns(t.current.db, { all: false, companies: ["co-2"] }, {}, NOW)).toEqual({ total: own, totalCapped: false });
    expect(await countRuns(t.current.db, { all: false, companies: ["co-2"] }, { search: "task" }, NOW)).toEqual({
      total: await t.current.db.run.count({ where: { companyId: "co-2", taskId: { contains: "task", mode: "insensitive" } } }),
      totalCapped: false,
    });
    // Another company's filter under a one-company scope: nothing, not that company's runs.
    const other = await listRuns(t.current.db, { all: false, companies: ["co-2"] }, { companyId: "co-1" }, NOW);
    expect(other).toEqual({ items: [], nextCursor: null });
    for (const f of [{ companyId: "co-1" }, { companyId: "co-1", range: "30d" as const }, { companyId: "co-1", search: "task" }]) {
      expect(await countRuns(t.current.db, { all: false, companies: ["co-2"] }, f, NOW)).toEqual({ total: 0, totalCapped: false });
    }
  });

  it("counts past the cap as capped and says so; a rollup filter stays exact past it", async () => {
    // 10,001 more runs of one task, made in the database itself; the rollup sums them exactly.
    const { db } = t.current;
    await db.$executeRaw`
      INSERT INTO runs (id, instance_id, company_id, task_id, agent, provider, target, sandbox_mode, status, created_at, updated_at)
      SELECT gen_random_uuid(), 'inst-l', 'co-big', 'bulk-' || g, 'a', 'codex', 'remote', 'warm', 'queued', ${NOW}::timestamptz - g * interval '1 second', ${NOW}::timestamptz
      FROM generate_series(1, 10001) AS g`;
    try {
      expect(await countRuns(db, { all: true }, { companyId: "co-big" }, NOW)).toEqual({ total: 10_001, totalCapped: false });
      expect(await countRuns(db, { all: true }, { search: "bulk-" }, NOW)).toEqual({ total: 10_000, totalCapped: true });
      expect(await countRuns(db, { all: true }, { companyId: "co-big", range: "24h" }, NOW)).toEqual({ total: 10_000, totalCapped: true });
      // One run fewer than the cap plus one is still exact.
      expect(await countRuns(db, { all: true }, { search: "bulk-", createdFrom: new Date(NOW.getTime() - 10_000_000) }, NOW)).toEqual({ total: 10_000, totalCapped: false });
      // A board user of another company counts none of them, by either way.
      expect(await countRuns(db, { all: false, companies: ["co-2"] }, { search: "bulk-" }, NOW)).toEqual({ total: 0, totalCapped: false });
      expect(await countRuns(db, { all: false, companies: ["co-2"] }, { companyId: "co-big" }, NOW)).toEqual({ total: 0, totalCapped: false });
    } finally {
      await db.run.deleteMany({ where: { companyId: "co-big" } });
    }
  }, 60_000);
});
