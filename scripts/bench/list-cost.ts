/**
 * `npx tsx scripts/bench/list-cost.ts [N] [REPS]` (docs/decisions/0003-cost-at-scale.md): where the fixed cost of one
 * `runs.list` request goes, on N runs (default 20,000) in a throwaway database. Times each
 * part alone — the input parse, Prisma's findMany, the same SQL through `$queryRaw` and
 * through a plain `pg` pool, the rollup aggregate, the output parse — and the whole requests
 * (`runs.list`, the page; `runs.count`, its total, a request of its own).
 */
import pg from "pg";
import { createDb, Prisma } from "../../server/db/client";
import { openDatabase } from "../../server/db/embedded";
import { migrate } from "../../server/db/migrate";
import { withDatabase } from "../../server/db/url";
import { env } from "../../server/env";
import { PAGE_ORDER } from "../../server/runs/cursor";
import { countRuns, listRuns, runListInput, runListOutput } from "../../server/runs/queries";
import { admin } from "../lib/admin";
import { quantile } from "./measure";
import { generateScaleData } from "./scale-data";

const n = Number(process.argv[2] ?? 20_000);
const reps = Number(process.argv[3] ?? 200);
const say = (line = "") => process.stdout.write(`${line}\n`);
const COLUMNS =
  "id, company_id, task_id, agent, provider, target, sandbox_mode, status, outcome, failure_code, owner, can_retry, provider_attempts, max_provider_attempts, restarts, previous_run_id, created_at, finished_at";

async function timed(name: string, fn: () => Promise<unknown>): Promise<void> {
  for (let i = 0; i < 20; i++) await fn();
  const t: number[] = [];
  for (let i = 0; i < reps; i++) {
    const s = process.hrtime.bigint();
    await fn();
    t.push(Number(process.hrtime.bigint() - s) / 1e6);
  }
  t.sort((a, b) => a - b);
  say(`  ${name.padEnd(52)} min ${t[0]!.toFixed(3).padStart(7)}  median ${quantile(t, 0.5).toFixed(3).padStart(7)}  p95 ${quantile(t, 0.95).toFixed(3).padStart(7)} ms`);
}

const server = await openDatabase({ env, database: "postgres" });
const name = `rwcost_${Date.now().toString(36)}`;
await admin(server.adminUrl, `CREATE DATABASE ${name}`);
const url = withDatabase(server.adminUrl, name);
try {
  await migrate(url);
  await generateScaleData(url, n);
  const db = createDb(url, { max: 4 });
  const pool = new pg.Pool({ connectionString: url, max: 4 });
  const ALL = { all: true } as const;
  const where = { AND: [{ companyId: "co-0042" }, { status: "failed" as const }] };
  const sql = `SELECT ${COLUMNS} FROM runs WHERE company_id = $1 AND status = 'failed' ORDER BY created_at DESC, id DESC LIMIT 26`;
  const out = await listRuns(db, ALL, { companyId: "co-0042", status: "failed" });
  say(`\n${n.toLocaleString("en")} runs, company + status, ${reps} reps each after 20 warm-ups`);
  await timed("zod: runListInput.parse", async () => runListInput.parse({ companyId: "co-0042", status: "failed" }));
  await timed("zod: runListOutput.parse (26 rows)", async () => runListOutput.parse(out));
  await timed("pg pool: page SQL", () => pool.query(sql, ["co-0042"]));
  await timed("prisma $queryRawUnsafe: page SQL", () => db.$queryRawUnsafe(sql, "co-0042"));
  await timed("prisma $queryRaw (Prisma.sql): page SQL", () =>
    db.$queryRaw(Prisma.sql`SELECT ${Prisma.raw(COLUMNS)} FROM runs WHERE company_id = ${"co-0042"} AND status = ${"failed"}::"RunStatus" ORDER BY created_at DESC, id DESC LIMIT 26`),
  );
  await timed("prisma findMany: page", () => db.run.findMany({ where, orderBy: PAGE_ORDER, take: 26 }));
  await timed("prisma aggregate: rollup total", () => db.runRollup.aggregate({ where: { AND: [{ n: { gt: 0 } }, ...where.AND] }, _sum: { n: true } }));
  await timed("pg pool: rollup total", () => pool.query(`SELECT sum(n) FROM run_rollups WHERE company_id = $1 AND status = 'failed'`, ["co-0042"]));
  const one = `WITH page AS (${sql}) SELECT counted.total, page.* FROM (SELECT (SELECT coalesce(sum(n), 0)::bigint FROM run_rollups WHERE company_id = $1 AND status = 'failed') AS total) AS counted LEFT JOIN page ON true ORDER BY page.created_at DESC, page.id DESC`;
  await timed("pg pool: page + rollup total in one statement", () => pool.query(one, ["co-0042"]));
  await timed("prisma $queryRawUnsafe: page + total in one statement", () => db.$queryRawUnsafe(one, "co-0042"));
  const column = sql.replace("SELECT id,", "SELECT (SELECT coalesce(sum(n), 0)::bigint FROM run_rollups WHERE company_id = $1 AND status = 'failed') AS total, id,");
  await timed("pg pool: page with the total as a column", () => pool.query(column, ["co-0042"]));
  await timed("prisma $queryRawUnsafe: page with the total as a column", () => db.$queryRawUnsafe(column, "co-0042"));
  const plan = await pool.query(`EXPLAIN (ANALYZE, SUMMARY) ${one}`, ["co-0042"]);
  say(plan.rows.map((r: Record<string, string>) => r["QUERY PLAN"]).join("\n"));
  const plan2 = await pool.query(`EXPLAIN (ANALYZE, SUMMARY) ${column}`, ["co-0042"]);
  say(plan2.rows.map((r: Record<string, string>) => r["QUERY PLAN"]).join("\n"));
  await timed("listRuns (the page, the whole request)", () => listRuns(db, ALL, { companyId: "co-0042", status: "failed" }));
  await timed("countRuns (the total, its own request)", () => countRuns(db, ALL, { companyId: "co-0042", status: "failed" }));
  await db.$disconnect();
  await pool.end();
} finally {
  await admin(server.adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await server.stop();
}
