import crypto from "node:crypto";
import { describe, expect, it } from "vitest";
import type { Prisma } from "../db/client";
import { withTestDatabase } from "../test/context";
import { countRuns, failureGroups, runFacets, runStatusCounts } from "./queries";

/**
 * The run rollup (docs/decisions/0003-cost-at-scale.md) is kept by a trigger in the transaction of every change to
 * `runs`; after any mix of inserts, moves, Retries, deletes and concurrent transactions it
 * must equal a GROUP BY over the runs themselves.
 */

const t = withTestDatabase();
const ALL = { all: true } as const;
const STATUSES = ["queued", "running", "suspended", "succeeded", "failed", "cancelled"] as const;
const CODES = [null, "native_provider_startup_rejected", "native_session_interrupted", "agent_command_failed"] as const;

function pick<T>(xs: readonly T[], i: number): T {
  return xs[i % xs.length] as T;
}

async function rollup(): Promise<string[]> {
  const rows = await t.current.db.$queryRaw<{ k: string }[]>`
    SELECT concat_ws('|', company_id, status, outcome, failure_code, provider, target, can_retry, open, sum(n)) AS k FROM run_rollups
    GROUP BY company_id, status, outcome, failure_code, provider, target, can_retry, open HAVING sum(n) <> 0 ORDER BY 1`;
  return rows.map((r) => r.k);
}

async function fromRuns(): Promise<string[]> {
  const rows = await t.current.db.$queryRaw<{ k: string }[]>`
    SELECT concat_ws('|', r.company_id, r.status, coalesce(r.outcome::text, ''), coalesce(r.failure_code, ''), r.provider, r.target, r.can_retry,
                     r.status = 'failed' AND s.id IS NULL, count(*)) AS k
    FROM runs r LEFT JOIN runs s ON s.previous_run_id = r.id
    GROUP BY r.company_id, r.status, r.outcome, r.failure_code, r.provider, r.target, r.can_retry, r.status = 'failed' AND s.id IS NULL ORDER BY 1`;
  return rows.map((r) => r.k);
}

async function compacted(): Promise<number> {
  const [row] = await t.current.db.$queryRaw<{ n: number }[]>`SELECT run_rollups_compact() AS n`;
  return row?.n ?? 0;
}

function runData(i: number): Prisma.RunCreateManyInput {
  const status = pick(STATUSES, i);
  const code = status === "failed" ? pick(CODES.slice(1), i) : status === "queued" && i % 3 === 0 ? "native_session_interrupted" : null;
  return {
    id: crypto.randomUUID(),
    instanceId: "inst-r",
    companyId: `co-${i % 4}`,
    taskId: `task-${i}`,
    agent: "a",
    provider: i % 2 ? "codex" : "claude",
    target: i % 3 ? "remote" : "local",
    sandboxMode: "warm",
    status,
    outcome: status === "failed" ? "terminal_failure" : code ? "retryable_failure" : null,
    failureCode: code,
    canRetry: status === "failed" && i % 2 === 0,
  };
}

describe("run rollup", () => {
  it("equals a GROUP BY of the runs after inserts, moves, Retries, deletes and concurrent transactions", async () => {
    const { db } = t.current;
    await db.instance.create({ data: { id: "inst-r", name: "r" } });
    const rows = Array.from({ length: 120 }, (_, i) => runData(i));
    await db.run.createMany({ data: rows });
    expect(await rollup()).toEqual(await fromRuns());
    expect((await rollup()).length).toBeGreaterThan(10);

    // Moves between groups, including to and from failed.
    for (const [i, r] of rows.slice(0, 40).entries()) {
      await db.run.update({ where: { id: r.id! }, data: { status: pick(STATUSES, i + 3), failureCode: pick(CODES, i), canRetry: i % 2 === 1 } });
    }
    expect(await rollup()).toEqual(await fromRuns());

    // Retries: successors of failed runs close their predecessors' open flag…
    const failed = await db.run.findMany({ where: { status: "failed" }, select: { id: true, companyId: true }, take: 15 });
    const successors = failed.map((f, i) => ({ ...runData(1000 + i), status: "queued" as const, outcome: null, failureCode: null, canRetry: false, companyId: f.companyId, previousRunId: f.id }));
    for (const s of successors) await db.run.create({ data: s });
    expect(await rollup()).toEqual(await fromRuns());
    // …a predecessor that changes after its Retry stays closed…
    const firstFailed = failed[0];
    expect(firstFailed).toBeTruthy();
    await db.run.update({ where: { id: firstFailed!.id }, data: { failureCode: "agent_command_failed" } });
    // …and reopens when its successor goes away.
    await db.run.deleteMany({ where: { id: { in: successors.slice(0, 5).map((s) => s.id!) } } });
    expect(await rollup()).toEqual(await fromRuns());

    // Concurrent transactions moving runs between the same two groups in opposite orders: the
    // trigger only inserts deltas, so none waits on another, let alone deadlocks.
    await db.run.updateMany({ where: { id: { in: rows.slice(40, 100).map((r) => r.id!) } }, data: { status: "succeeded", failureCode: null, outcome: null, companyId: "co-9", provider: "codex", target: "remote", canRetry: false } });
    const ids = rows.slice(40, 100).map((r) => r.id!);
    const toFailed = { status: "failed" as const, failureCode: "native_provider_startup_rejected", outcome: "terminal_failure" as const };
    const toSucceeded = { status: "succeeded" as const, failureCode: null, outcome: null };
    await db.run.updateMany({ where: { id: { in: ids.filter((_, i) => i % 2 === 1) } }, data: toFailed });
    for (let wave = 0; wave < 3; wave++) {
      await Promise.all(
        Array.from({ length: 10 }, (_, k) => {
          const a = ids[wave * 20 + k * 2]!;
          const b = ids[wave * 20 + k * 2 + 1]!;
          const [first, second] = k % 2 ? [a, b] : [b, a];
          return db.$transaction(
            async (tx) => {
              await tx.run.update({ where: { id: first }, data: first === a ? toFailed : toSucceeded });
              await tx.run.update({ where: { id: second }, data: second === a ? toFailed : toSucceeded });
            },
            { maxWait: 30_000, timeout: 30_000 },
          );
        }),
      );
    }
    expect(await rollup()).toEqual(await fromRuns());
    // Folded: one row per group, the same sums.
    const before = await db.runRollup.count();
    expect(await compacted()).toBeGreaterThan(0);
    expect(await rollup()).toEqual(await fromRuns());
    expect(await db.runRollup.count()).toBe((await rollup()).length);
    expect(before).toBeGreaterThan(await db.runRollup.count());

    // Deletes, and a TRUNCATE (tests and operators use both).
    await db.run.deleteMany({ where: { companyId: "co-1", previousRunId: null, nextRun: null } });
    expect(await rollup()).toEqual(await fromRuns());
    await db.$executeRawUnsafe("TRUNCATE runs CASCADE");
    expect(await rollup()).toEqual([]);
  });

  it("answers failure groups, facets and status counts from the rollup as the runs would", async () => {
    const { db } = t.current;
    const rows = Array.from({ length: 60 }, (_, i) => runData(i));
    await db.run.createMany({ data: rows });
    const statusCounts = await runStatusCounts(db, ALL);
    expect(statusCounts.total).toBe(60);
    for (const s of STATUSES) expect(statusCounts.byStatus[s]).toBe(rows.filter((r) => r.status === s).length);

    const groups = await failureGroups(db, ALL, { companyId: "co-2" });
    // The same question with a time range goes to the runs themselves: the answers agree.
    const fromTable = await failureGroups(db, ALL, { companyId: "co-2", range: "30d" });
    expect(groups.map((g) => [g.code, g.count, g.open])).toEqual(fromTable.map((g) => [g.code, g.count, g.open]));
    expect(groups.length).toBeGreaterThan(0);

    // runs.count comes from the rollup for column filters and equals the runs' own count.
    for (const filter of [{}, { status: "failed" as const }, { companyId: "co-2", failureCode: "agent_command_failed" }, { provider: "codex", target: "remote" as const }]) {
      expect(await countRuns(db, ALL, filter)).toEqual({ total: await db.run.count({ where: filter }), totalCapped: false });
    }
    expect((await countRuns(db, { all: false, companies: ["co-0"] }, {})).total).toBe(await db.run.count({ where: { companyId: "co-0" } }));

    const facets = await runFacets(db, { all: false, companies: ["co-0", "co-3"] });
    expect(facets.companies).toEqual(["co-0", "co-3"]);
    expect(facets.providers).toEqual(["claude", "codex"]);

    // A company whose runs all moved away has delta rows that sum to zero until folded: it is no facet, and counts none.
    await db.run.updateMany({ where: { companyId: "co-3" }, data: { companyId: "co-0" } });
    expect((await runFacets(db, { all: false, companies: ["co-0", "co-3"] })).companies).toEqual(["co-0"]);
    expect((await runStatusCounts(db, { all: false, companies: ["co-3"] })).total).toBe(0);
    expect((await countRuns(db, { all: false, companies: ["co-3"] }, {})).total).toBe(0);
  });
});
