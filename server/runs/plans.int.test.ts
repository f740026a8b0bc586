import { PrismaPg } from "@prisma/adapter-pg";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PrismaClient, type Db } from "../db/client";
import { withTestDatabase } from "../test/context";
import { executingRunsPage } from "../controller/recovery";
import { pendingIntentsPage, reclaimWriteSql } from "../controller/sweeps";
import { encodeCursor } from "./cursor";
import { getRunDetail } from "./detail";
import { countRuns, listRuns, type RunFilter, type RunListInput } from "./queries";
import { listIntents } from "../intents/queries";
import { servicesFor } from "../services";
import { generateScaleData, OUR_INSTANCE } from "../../scripts/bench/scale-data";

/**
 * docs/decisions/0003-cost-at-scale.md: every list query reads an index range, never the whole of `runs`,
 * `run_events`, `sandbox_creation_intents` or `environment_leases`. Each read model runs with Prisma's query log on; every statement it sent is
 * then EXPLAINed with its own parameters, and the test fails on a sequential scan of either
 * table. The data is the benchmark's (realistic proportions), large enough that PostgreSQL
 * prefers an index whenever one serves the query.
 */

const t = withTestDatabase();
let db: Db;
let raw: pg.Client;
let sent: { query: string; params: string }[] = [];
const ALL = { all: true } as const;
const WATCHED = new Set(["runs", "run_events", "sandbox_creation_intents", "environment_leases"]);

interface PlanNode {
  "Node Type": string;
  "Relation Name"?: string;
  "Rows Removed by Filter"?: number;
  Plans?: PlanNode[];
}

function rowsRemoved(node: PlanNode): number {
  return (node["Rows Removed by Filter"] ?? 0) + (node.Plans ?? []).reduce((n, c) => n + rowsRemoved(c), 0);
}

function seqScans(node: PlanNode, out: string[] = []): string[] {
  if (node["Node Type"] === "Seq Scan" && node["Relation Name"] && WATCHED.has(node["Relation Name"])) out.push(node["Relation Name"]);
  for (const child of node.Plans ?? []) seqScans(child, out);
  return out;
}

const READS_RUNS = /"public"\."(runs|run_events|run_rollups)"|\b(FROM|JOIN)\s+(runs|run_events|run_rollups)\b/i;

/** Runs `fn` and returns, per statement it sent that matches `reads` (by default: reads runs, run_events or run_rollups), the tables it scanned whole. */
async function scansOf(fn: () => Promise<unknown>, reads = READS_RUNS): Promise<{ sql: string; seq: string[]; removed: number }[]> {
  sent = [];
  await fn();
  const statements = sent.filter((s) => reads.test(s.query));
  expect(statements.length).toBeGreaterThan(0);
  const out: { sql: string; seq: string[]; removed: number }[] = [];
  for (const s of statements) {
    const params = JSON.parse(s.params) as unknown[];
    const res = await raw.query<{ "QUERY PLAN": { Plan: PlanNode }[] }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${s.query}`, params);
    const plan = res.rows[0]?.["QUERY PLAN"][0]?.Plan;
    expect(plan).toBeTruthy();
    out.push({ sql: s.query, seq: plan ? seqScans(plan) : [], removed: plan ? rowsRemoved(plan) : 0 });
  }
  return out;
}

let restartedRun = "";
let midCursor = "";

beforeAll(async () => {
  await generateScaleData(t.current.url, 20_000);
  const logged = new PrismaClient({ adapter: new PrismaPg({ connectionString: t.current.url, max: 2 }), log: [{ emit: "event", level: "query" }] });
  logged.$on("query", (e) => sent.push({ query: e.query, params: e.params }));
  db = logged;
  raw = new pg.Client({ connectionString: t.current.url });
  await raw.connect();
  // What autovacuum does for a table this size in production: the visibility map lets counts read the index alone
  // (without it, at 20 k intents PostgreSQL counts a status by a seq scan and a sort).
  await raw.query("VACUUM ANALYZE runs, run_events, sandbox_creation_intents, environment_leases");
  const restarted = await raw.query<{ id: string }>(`SELECT id FROM runs WHERE restarts > 0 ORDER BY created_at DESC, id DESC OFFSET 50 LIMIT 1`);
  restartedRun = restarted.rows[0]?.id ?? "";
  const mid = await raw.query<{ created_at: Date; id: string }>(`SELECT created_at, id FROM runs ORDER BY created_at DESC, id DESC OFFSET 10000 LIMIT 1`);
  const m = mid.rows[0];
  if (m) midCursor = encodeCursor({ createdAt: m.created_at, id: m.id });
}, 180_000);

afterAll(async () => {
  await db?.$disconnect();
  await raw?.end();
});

const LISTS: [string, () => RunListInput][] = [
  ["first page", () => ({})],
  ["status", () => ({ status: "failed" })],
  ["outcome", () => ({ outcome: "terminal_failure" })],
  ["failure code", () => ({ failureCode: "native_provider_startup_rejected" })],
  ["provider", () => ({ provider: "claude" })],
  ["company", () => ({ companyId: "co-0042" })],
  ["company + status", () => ({ companyId: "co-0042", status: "failed" })],
  ["company + outcome", () => ({ companyId: "co-0042", outcome: "terminal_failure" })],
  ["company + provider + target", () => ({ companyId: "co-0042", provider: "codex", target: "local" })],
  ["last 24 h", () => ({ range: "24h" })],
  ["a deep page", () => ({ cursor: midCursor })],
  ["search a task", () => ({ search: "task-250-1" })],
  ["search an exact run id", () => ({ search: restartedRun })],
];

/** runs.count's filters: the list's, less the cursor, plus dates (the capped count's other case). */
const COUNTS: [string, RunFilter, "rollup" | "capped"][] = [
  ["no filter", {}, "rollup"],
  ["status", { status: "failed" }, "rollup"],
  ["outcome", { outcome: "terminal_failure" }, "rollup"],
  ["failure code", { failureCode: "native_provider_startup_rejected" }, "rollup"],
  ["provider", { provider: "claude" }, "rollup"],
  ["company", { companyId: "co-0042" }, "rollup"],
  ["company + status", { companyId: "co-0042", status: "failed" }, "rollup"],
  ["company + provider + target", { companyId: "co-0042", provider: "codex", target: "local" }, "rollup"],
  ["last 24 h", { range: "24h" }, "capped"],
  ["last 24 h of a company", { range: "24h", companyId: "co-0042" }, "capped"],
  ["dates", { createdFrom: new Date(Date.now() - 7 * 86_400_000), createdTo: new Date() }, "capped"],
  ["search a task", { search: "task-250-1" }, "capped"],
  ["search every task (past the cap)", { search: "task" }, "capped"],
];

describe("query plans at scale", () => {
  it.each(LISTS)("runs.list %s reads no table whole", async (_name, input) => {
    const plans = await scansOf(() => listRuns(db, ALL, input()));
    expect(plans.filter((p) => p.seq.length > 0)).toEqual([]);
  });

  it.each(COUNTS)("runs.count %s is one statement that reads no table whole", async (_name, filter, how) => {
    const plans = await scansOf(() => countRuns(db, ALL, filter));
    expect(plans).toHaveLength(1);
    expect(plans.filter((p) => p.seq.length > 0)).toEqual([]);
    // A rollup count never reads the runs; a capped one reads them up to the cap in the list's order.
    if (how === "rollup") expect(plans[0]?.sql).not.toMatch(/\bFROM\s+runs\b/i);
    else expect(plans[0]?.sql).toMatch(/ORDER BY created_at DESC, id DESC LIMIT/i);
  });

  it("runs.count of a one-company board user reads no table whole", async () => {
    for (const filter of [{}, { range: "24h" as const }, { search: "task" }]) {
      const plans = await scansOf(() => countRuns(db, { all: false, companies: ["co-0042"] }, filter));
      expect(plans.filter((p) => p.seq.length > 0)).toEqual([]);
    }
  });

  it.each([
    ["pending (the default)", {}],
    ["all statuses", { status: "all" as const }],
  ])("intents.list %s reads no table whole, its counts and joins included", async (_name, input) => {
    const observer = servicesFor(db, OUR_INSTANCE).observer;
    const plans = await scansOf(() => listIntents(db, observer, ALL, OUR_INSTANCE, input));
    expect(plans.filter((p) => p.seq.length > 0)).toEqual([]);
  });

  // A board user's intents page is always one company's (their scope), and an operator filters by one.
  it.each([
    ["a company filter, pending", ALL, { companyId: "co-0042" }],
    ["a company filter, all statuses", ALL, { companyId: "co-0042", status: "all" as const }],
    ["one company's board user", { all: false as const, companies: ["co-0042"] }, {}],
  ])("intents.list with %s reads no table whole", async (_name, scope, input) => {
    const observer = servicesFor(db, OUR_INSTANCE).observer;
    const plans = await scansOf(() => listIntents(db, observer, scope, OUR_INSTANCE, input));
    expect(plans.filter((p) => p.seq.length > 0)).toEqual([]);
  });

  it("a deep page starts its index range at the cursor instead of filtering from the top", async () => {
    const plans = await scansOf(() => listRuns(db, ALL, { cursor: midCursor }));
    const page = plans.find((p) => /LIMIT/.test(p.sql) && !/COUNT/.test(p.sql));
    expect(page).toBeTruthy();
    // 10,000 rows sit above the cursor: reading them and throwing them away is the bug.
    expect(page?.removed).toBeLessThan(100);
  });

  it("runs.count counts column filters exactly from the rollup; a search counts up to 10,000 and then says so", async () => {
    const everything = await raw.query<{ n: string }>(`SELECT count(*) AS n FROM runs`);
    expect(Number(everything.rows[0]?.n)).toBeGreaterThan(10_000);
    expect(await countRuns(db, ALL, {})).toEqual({ total: Number(everything.rows[0]?.n), totalCapped: false });
    // Every task id contains "task": the search matches every run, and is counted up to the cap.
    expect(await countRuns(db, ALL, { search: "task" })).toEqual({ total: 10_000, totalCapped: true });
    const company = await countRuns(db, ALL, { companyId: "co-0042" });
    const exact = await raw.query<{ n: string }>(`SELECT count(*) AS n FROM runs WHERE company_id = 'co-0042'`);
    expect(company).toEqual({ total: Number(exact.rows[0]?.n), totalCapped: false });
  });

  it("an exact run id finds that run alone", async () => {
    const found = await listRuns(db, ALL, { search: restartedRun.toUpperCase() });
    expect(found.items.map((r) => r.id)).toEqual([restartedRun]);
  });

  it("the controller's recovery poll is an index range read over executing runs", async () => {
    const plans = await scansOf(() => executingRunsPage(db, { instanceId: "bench-a", bootId: "another-boot", now: new Date(), cursor: null, take: 100 }));
    expect(plans.filter((p) => p.seq.length > 0)).toEqual([]);
    // Every finished run of the table sits before or between the executing ones in id order.
    expect(plans.reduce((n, p) => n + p.removed, 0)).toBeLessThan(1000);
  });

  it("the sweep's page of pending intents probes the leases of its own rows, and reads no table whole", async () => {
    for (const after of [null, "5"]) {
      const plans = await scansOf(
        () => pendingIntentsPage(db, { instanceId: OUR_INSTANCE, pageSize: 500, after }),
        /\bFROM\s+sandbox_creation_intents\b/i,
      );
      expect(plans).toHaveLength(1);
      expect(plans.filter((p) => p.seq.length > 0)).toEqual([]);
    }
  });

  it("the sweep's reclaim write reads the intents it marks by their key", async () => {
    const pending = await raw.query<{ id: string }>(`SELECT operation_id AS id FROM sandbox_creation_intents WHERE status = 'pending' ORDER BY operation_id LIMIT 4`);
    expect(pending.rows).toHaveLength(4);
    const at = new Date();
    const sql = reclaimWriteSql({
      at,
      proofs: [],
      leases: [],
      intents: pending.rows.map(({ id }) => ({ id, now: at, lastInspection: { found: true }, nextAttemptAt: null })),
    });
    // EXPLAIN alone: the plan without running the write. Without a nested loop (which the
    // planner gives up for a smaller table: 5 k intents in the benchmark), the join read every
    // intent; the ids as an array still read only theirs.
    await raw.query("BEGIN");
    await raw.query("SET LOCAL enable_nestloop = off");
    const res = await raw.query<{ "QUERY PLAN": { Plan: PlanNode }[] }>(`EXPLAIN (FORMAT JSON) ${sql.text}`, sql.values).finally(() => raw.query("ROLLBACK"));
    const plan = res.rows[0]?.["QUERY PLAN"][0]?.Plan;
    expect(plan).toBeTruthy();
    expect(plan ? seqScans(plan) : ["no plan"]).toEqual([]);
  });

  it("runs.get of a restarted run reads no table whole", async () => {
    expect(restartedRun).not.toBe("");
    const plans = await scansOf(() => getRunDetail(db, ALL, restartedRun));
    expect(plans.filter((p) => p.seq.length > 0)).toEqual([]);
  });

  it("the check itself sees a sequential scan when a filter has no index", async () => {
    // `agent` has no index: the same check must report the scan, or it proves nothing.
    const plans = await scansOf(() => db.run.findMany({ where: { agent: "claude-acpx" }, take: 26, orderBy: { finishedAt: "desc" } }));
    expect(plans.flatMap((p) => p.seq)).toContain("runs");
  });
});
