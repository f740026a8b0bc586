import crypto from "node:crypto";
import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { withTestDatabase } from "../test/context";
import { compactRollups } from "./rollups";

/**
 * The rollups are kept in the transaction of every change (docs/decisions/0003-cost-at-scale.md), across every controller
 * sharing the database (docs/operations.md, "Several controllers on one database"): a writer must never wait for another's open transaction
 * because both changed runs (or intents) of the same groups. A controller stalled inside such
 * a transaction (SIGSTOP on another host) once held a company's rollup rows until PostgreSQL
 * ended its session, and every other controller's status changes queued behind it.
 */

const t = withTestDatabase();
const open: pg.Client[] = [];
afterEach(async () => {
  for (const c of open.splice(0)) await c.end().catch(() => {});
});

async function client(): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: t.current.url });
  c.on("error", () => {});
  await c.connect();
  open.push(c);
  // Waiting on a lock past this is the failure under test, not a slow machine.
  await c.query("SET lock_timeout = '3s'");
  return c;
}

async function runs(n: number, company: string): Promise<string[]> {
  const { db } = t.current;
  await db.instance.upsert({ where: { id: "inst-l" }, create: { id: "inst-l", name: "l" }, update: {} });
  const ids = Array.from({ length: n }, () => crypto.randomUUID());
  await db.run.createMany({ data: ids.map((id, i) => ({ id, instanceId: "inst-l", companyId: company, taskId: `task-${id}-${i}`, agent: "a", provider: "codex", target: "remote" as const, sandboxMode: "warm" as const, status: "running" as const })) });
  return ids;
}

async function statusCounts(company: string): Promise<Record<string, number>> {
  const rows = await t.current.db.$queryRaw<{ status: string; n: number }[]>`SELECT status::text, sum(n)::int AS n FROM run_rollups WHERE company_id = ${company} GROUP BY 1 HAVING sum(n) <> 0 ORDER BY 1`;
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}

describe("rollups under concurrent writers", () => {
  it("a run's status change does not wait for another open transaction that moved a run of the same groups", async () => {
    const [a, b] = await runs(2, "co-0");
    const stalled = await client();
    await stalled.query("BEGIN");
    await stalled.query(`UPDATE runs SET status = 'succeeded' WHERE id = $1`, [a]);
    // …and the stalled one does nothing more: the other writer goes through at once.
    const other = await client();
    const t0 = Date.now();
    await other.query(`UPDATE runs SET status = 'succeeded' WHERE id = $1`, [b]);
    expect(Date.now() - t0).toBeLessThan(3000);
    expect(await statusCounts("co-0")).toEqual({ succeeded: 1, running: 1 });
    await stalled.query("COMMIT");
    expect(await statusCounts("co-0")).toEqual({ succeeded: 2 });
  });

  it("an intent's status change does not wait for another open transaction that moved an intent of the same groups", async () => {
    const { db } = t.current;
    const ids = [crypto.randomUUID(), crypto.randomUUID()];
    await db.sandboxCreationIntent.createMany({
      data: ids.map((id) => ({ id, instanceId: "inst-l", companyId: "co-l", runId: `run-${id}`, creationName: `rw-${id}`, labels: {}, settleDeadline: new Date(), nextAttemptAt: new Date(), status: "pending" as const })),
    });
    const stalled = await client();
    await stalled.query("BEGIN");
    await stalled.query(`UPDATE sandbox_creation_intents SET status = 'committed' WHERE operation_id = $1`, [ids[0]]);
    const other = await client();
    await other.query(`UPDATE sandbox_creation_intents SET status = 'committed' WHERE operation_id = $1`, [ids[1]]);
    await stalled.query("COMMIT");
    const rows = await db.$queryRaw<{ status: string; n: number }[]>`SELECT status::text, sum(n)::int AS n FROM intent_rollups WHERE company_id = 'co-l' GROUP BY 1 HAVING sum(n) <> 0`;
    expect(rows).toEqual([{ status: "committed", n: 2 }]);
  });

  it("compaction folds each group into one row, waits for no writer, and leaves an open writer's delta for the next pass", async () => {
    const { db } = t.current;
    const ids = await runs(30, "co-2");
    for (const id of ids.slice(0, 20)) await db.run.update({ where: { id }, data: { status: "succeeded" } });
    expect(await db.runRollup.count({ where: { companyId: "co-2" } })).toBeGreaterThan(20);

    const writer = await client();
    await writer.query("BEGIN");
    await writer.query(`UPDATE runs SET status = 'failed', failure_code = 'agent_command_failed' WHERE id = $1`, [ids[29]]);
    const folded = await compactRollups(db);
    expect(folded.runRows).toBeGreaterThan(20);
    // One row per group of committed changes: running and succeeded.
    expect(await db.runRollup.count({ where: { companyId: "co-2" } })).toBe(2);
    expect(await statusCounts("co-2")).toEqual({ running: 10, succeeded: 20 });
    await writer.query("COMMIT");
    expect(await statusCounts("co-2")).toEqual({ failed: 1, running: 9, succeeded: 20 });
    await compactRollups(db);
    expect(await db.runRollup.count({ where: { companyId: "co-2" } })).toBe(3);
    expect(await statusCounts("co-2")).toEqual({ failed: 1, running: 9, succeeded: 20 });
  });

  it("one compaction at a time: another started meanwhile folds nothing and returns at once", async () => {
    const { db } = t.current;
    const ids = await runs(4, "co-3");
    for (const id of ids) await db.run.update({ where: { id }, data: { status: "cancelled" } });
    const first = await client();
    await first.query("BEGIN");
    await first.query("SELECT run_rollups_compact()");
    await db.run.update({ where: { id: ids[0]! }, data: { status: "succeeded" } });
    expect(await compactRollups(db)).toEqual({ runRows: 0, intentRows: expect.any(Number) as number });
    await first.query("COMMIT");
    expect((await compactRollups(db)).runRows).toBeGreaterThan(0);
    expect(await statusCounts("co-3")).toEqual({ cancelled: 3, succeeded: 1 });
  });
});
