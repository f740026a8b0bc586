import crypto from "node:crypto";
import { describe, expect, it } from "vitest";
import type { IntentStatus, Prisma } from "../db/client";
import { withTestDatabase } from "../test/context";

/**
 * The intent rollup is kept by a trigger in the transaction of every change to
 * `sandbox_creation_intents`; after any mix of inserts, moves, deletes, concurrent
 * transactions and a TRUNCATE it must equal a GROUP BY over the intents themselves.
 */

const t = withTestDatabase();
const STATUSES: readonly IntentStatus[] = ["pending", "committed", "reclaimed", "resolved_absent", "manual_reconciliation"];

async function rollup(): Promise<string[]> {
  const rows = await t.current.db.$queryRaw<{ k: string }[]>`SELECT concat_ws('|', instance_id, company_id, status, sum(n)) AS k FROM intent_rollups GROUP BY instance_id, company_id, status HAVING sum(n) <> 0 ORDER BY 1`;
  return rows.map((r) => r.k);
}

async function fromIntents(): Promise<string[]> {
  const rows = await t.current.db.$queryRaw<{ k: string }[]>`
    SELECT concat_ws('|', instance_id, company_id, status, count(*)) AS k FROM sandbox_creation_intents GROUP BY instance_id, company_id, status ORDER BY 1`;
  return rows.map((r) => r.k);
}

function intentData(i: number): Prisma.SandboxCreationIntentCreateManyInput {
  const id = crypto.randomUUID();
  return {
    id,
    instanceId: `inst-${i % 2}`,
    companyId: `co-${i % 3}`,
    runId: crypto.randomUUID(),
    creationName: `rw-${id}`,
    labels: {},
    status: STATUSES[i % STATUSES.length]!,
    settleDeadline: new Date(),
    nextAttemptAt: new Date(),
  };
}

describe("intent rollup", () => {
  it("equals a GROUP BY of the intents after inserts, moves, deletes, concurrent transactions and a TRUNCATE", async () => {
    const { db } = t.current;
    const rows = Array.from({ length: 90 }, (_, i) => intentData(i));
    await db.sandboxCreationIntent.createMany({ data: rows });
    expect(await rollup()).toEqual(await fromIntents());
    expect((await rollup()).length).toBeGreaterThan(20);

    // Moves: status, company, and an inspection that changes no counted column.
    for (const [i, r] of rows.slice(0, 30).entries()) {
      await db.sandboxCreationIntent.update({ where: { id: r.id }, data: { status: STATUSES[(i + 2) % STATUSES.length]!, ...(i % 4 === 0 ? { companyId: "co-9" } : {}) } });
    }
    await db.sandboxCreationIntent.updateMany({ where: { id: { in: rows.slice(30, 40).map((r) => r.id) } }, data: { attempts: { increment: 1 }, lastInspectedAt: new Date() } });
    expect(await rollup()).toEqual(await fromIntents());

    // Concurrent transactions moving intents between the same two groups in opposite orders:
    // the trigger only inserts deltas, so none waits on another.
    const ids = rows.slice(40, 80).map((r) => r.id);
    await db.sandboxCreationIntent.updateMany({ where: { id: { in: ids } }, data: { instanceId: "inst-0", companyId: "co-0", status: "pending" } });
    await Promise.all(
      Array.from({ length: 20 }, (_, k) => {
        const a = ids[k * 2]!;
        const b = ids[k * 2 + 1]!;
        const [first, second] = k % 2 ? [a, b] : [b, a];
        return db.$transaction(
          async (tx) => {
            await tx.sandboxCreationIntent.update({ where: { id: first }, data: { status: "committed" } });
            await tx.sandboxCreationIntent.update({ where: { id: second }, data: { status: "reclaimed" } });
          },
          { maxWait: 30_000, timeout: 30_000 },
        );
      }),
    );
    expect(await rollup()).toEqual(await fromIntents());

    const [folded] = await db.$queryRaw<{ n: number }[]>`SELECT intent_rollups_compact() AS n`;
    expect(folded?.n).toBeGreaterThan(0);
    expect(await rollup()).toEqual(await fromIntents());
    expect(await db.intentRollup.count()).toBe((await rollup()).length);

    await db.sandboxCreationIntent.deleteMany({ where: { companyId: "co-1" } });
    expect(await rollup()).toEqual(await fromIntents());
    await db.$executeRawUnsafe("TRUNCATE sandbox_creation_intents CASCADE");
    expect(await rollup()).toEqual([]);
  });
});
