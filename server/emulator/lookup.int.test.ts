import { afterAll, afterEach, beforeAll, describe, expect, inject, it, vi } from "vitest";
import type { DaytonaProvider } from "../providers/daytona";
import { buildLabels, creationName } from "../providers/types";
import { startTestEmulator, type TestEmulator } from "../test/emulator";

/**
 * GET and DELETE by id or name (docs/decisions/0003-cost-at-scale.md): with no fault rule set, a GET is one statement (due
 * transitions settled, the row and the fault rules read) and a DELETE of a sandbox at rest one
 * conditional update, no transaction; any rule with uses left sends the call down the full
 * path, so every rule is still honoured.
 */

let t: TestEmulator;
let provider: DaytonaProvider;

beforeAll(async () => {
  t = await startTestEmulator(inject("adminUrl"), inject("runPrefix"), { transitionMs: { create: 0, start: 0, stop: 0, destroy: 0 } });
  provider = t.provider({ instanceId: "inst-a" });
});

afterEach(async () => {
  vi.restoreAllMocks();
  await t.admin.clearFaults();
});

afterAll(async () => {
  await t?.close();
});

const make = (op: string) => provider.create({ name: creationName("rw", op), labels: buildLabels({ instanceId: "inst-a", companyId: "co-1", operationId: op }) });

/** The statements the emulator sends while `fn` runs (the auto-stop sweeper's own left out). */
async function statements(fn: () => Promise<unknown>): Promise<{ sql: string[]; transactions: number }> {
  const pool = t.emulator.store.pool;
  const query = pool.query.bind(pool) as (...args: unknown[]) => unknown;
  const sql: string[] = [];
  const spy = vi.spyOn(pool, "query").mockImplementation(((...args: unknown[]) => {
    const text = typeof args[0] === "string" ? args[0] : String((args[0] as { text?: string }).text);
    if (!new Error().stack?.includes("autoStop")) sql.push(text);
    return query(...args);
  }) as typeof pool.query);
  const transaction = vi.spyOn(t.emulator.store, "transaction");
  await fn();
  const transactions = transaction.mock.calls.length;
  spy.mockRestore();
  transaction.mockRestore();
  return { sql, transactions };
}

async function timed<T>(fn: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await fn();
  return { value, ms: performance.now() - started };
}

describe("GET and DELETE with no fault rule", () => {
  it("answers a GET by name or id with one lookup and a DELETE with one update", async () => {
    const sbx = await make("op-quiet");
    const byName = await statements(() => provider.getByName(sbx.name));
    expect(byName).toEqual({ sql: [expect.stringMatching(/^WITH settled AS[\s\S]*emulator_fault/)], transactions: 0 });
    const byId = await statements(() => provider.getById(sbx.id));
    expect(byId.sql).toHaveLength(1);
    expect(byId.transactions).toBe(0);
    const del = await statements(async () => expect(await provider.destroy(sbx.id)).toEqual({ outcome: "destroyed" }));
    expect(del).toEqual({ sql: [expect.stringMatching(/^UPDATE emulator_sandbox[\s\S]*NOT EXISTS \(SELECT 1 FROM emulator_fault/)], transactions: 0 });
    // Deleted as the full path deletes: renamed at once, so the name is a 404 and free again.
    expect(await provider.getByName(sbx.name)).toBeNull();
    const [row] = (await t.admin.sandboxes({ includeDestroyed: true })).filter((s) => s.id === sbx.id);
    expect(row?.name).toMatch(new RegExp(`^DESTROYED_${sbx.name}_\\d+$`));
    expect(row?.state).toBe("destroyed");
  });

  it("still refuses a DELETE the full path refuses: a sandbox changing state (409), one already gone (404 → already_gone)", async () => {
    await t.admin.configure({ transitionMs: { stop: 60_000 } });
    try {
      const sbx = await make("op-changing");
      await fetch(`${t.emulator.url}/sandbox/${sbx.id}/stop`, { method: "POST", headers: { authorization: "Bearer emulator-key" } });
      const res = await fetch(`${t.emulator.url}/sandbox/${sbx.id}`, { method: "DELETE", headers: { authorization: "Bearer emulator-key" } });
      expect(res.status).toBe(409);
      expect((await provider.getById(sbx.id))?.state).toBe("stopping");
    } finally {
      await t.admin.configure({ transitionMs: { stop: 0 } });
    }
    const gone = await make("op-gone");
    await provider.destroy(gone.id);
    const again = await fetch(`${t.emulator.url}/sandbox/${gone.id}`, { method: "DELETE", headers: { authorization: "Bearer emulator-key" } });
    expect(again.status).toBe(404);
  });
});

describe("GET and DELETE with fault rules", () => {
  it("honours a latency rule on GET and DELETE, and only for the sandbox it matches", async () => {
    const slow = await make("op-slow");
    const fast = await make("op-fast");
    await t.admin.setFault({ match: { name: slow.name }, fault: { kind: "latency", ms: 400 } });
    expect((await timed(() => provider.getByName(slow.name))).ms).toBeGreaterThanOrEqual(390);
    expect((await timed(() => provider.getById(slow.id))).ms).toBeGreaterThanOrEqual(390);
    const other = await timed(() => provider.getByName(fast.name));
    expect(other.value?.id).toBe(fast.id);
    expect(other.ms).toBeLessThan(300);
    const del = await timed(() => provider.destroy(slow.id));
    expect(del.value).toEqual({ outcome: "destroyed" });
    expect(del.ms).toBeGreaterThanOrEqual(390);
  });

  it("takes the full path while a rule has uses left, the one-lookup path once they are used up", async () => {
    const sbx = await make("op-once");
    await t.admin.setFault({ match: { name: sbx.name }, fault: { kind: "latency", ms: 1 }, times: 1 });
    const first = await statements(() => provider.getByName(sbx.name));
    expect(first.sql.length).toBeGreaterThan(1); // the rule's use taken, the row read again
    expect((await t.admin.faults())[0]?.used).toBe(1);
    const second = await statements(() => provider.getByName(sbx.name));
    expect(second.sql).toHaveLength(1);
  });
});
