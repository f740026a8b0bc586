import { TRPCError } from "@trpc/server";
import { beforeAll, describe, expect, it } from "vitest";
import { withTestDatabase } from "../test/context";
import { testUser } from "../test/users";
import { json } from "../controller/records";
import { createCaller } from "./root";
import { createTRPCContext } from "./trpc";

/** A board user of company A never reads or retries company B's things, by id guessing either. */

const t = withTestDatabase();
const boardA = testUser("board", ["co-a"]);
const caller = (user = boardA) => createCaller(() => createTRPCContext({ user, headers: new Headers(), db: t.current.db }));
let runA: string;
let runB: string;

beforeAll(async () => {
  const { db } = t.current;
  await db.instance.create({ data: { id: "inst-local", name: "local" } });
  const base = { instanceId: "inst-local", agent: "a", provider: "codex", target: "remote" as const, sandboxMode: "warm" as const };
  const failed = { status: "failed" as const, outcome: "terminal_failure" as const, failureCode: "native_provider_startup_rejected", canRetry: true, owner: "board" as const };
  runA = (await db.run.create({ data: { ...base, ...failed, companyId: "co-a", taskId: "ta" } })).id;
  runB = (await db.run.create({ data: { ...base, ...failed, companyId: "co-b", taskId: "tb" } })).id;
  const intent = (company: string, id: string) => ({
    id,
    instanceId: "inst-local",
    companyId: company,
    runId: "probe",
    creationName: `rw-create-${id}`,
    labels: json({}),
    settleDeadline: new Date(),
    nextAttemptAt: new Date(),
  });
  await db.sandboxCreationIntent.createMany({ data: [intent("co-a", "op-a"), intent("co-b", "op-b")] });
  await db.chaosWave.createMany({
    data: [
      { id: "w-20261112T000000-s1", seed: 1, instanceId: "wave-a", companyId: "co-a", plan: {}, config: {}, startedAt: new Date(), status: "passed" },
      { id: "w-20261112T000000-s2", seed: 2, instanceId: "wave-b", companyId: "co-b", plan: {}, config: {}, startedAt: new Date(), status: "passed" },
    ],
  });
  await db.auditEntry.createMany({
    data: [
      { actor: "x", role: "board", action: "run.retry", targetType: "run", targetId: runA, companyId: "co-a", outcome: "ok" },
      { actor: "y", role: "board", action: "run.retry", targetType: "run", targetId: runB, companyId: "co-b", outcome: "ok" },
    ],
  });
});

async function code(p: Promise<unknown>) {
  const err = await p.then(() => null, (e: unknown) => e);
  return err instanceof TRPCError ? err.code : "OK";
}

describe("company scoping", () => {
  it("lists, counts and groups only the user's companies", async () => {
    expect((await caller().runs.list({})).items.map((r) => r.id)).toEqual([runA]);
    expect((await caller().runs.countByStatus()).total).toBe(1);
    expect(await caller().runs.count({})).toEqual({ total: 1, totalCapped: false });
    // "t" is in both companies' task ids: the capped count is scoped too, and so is a filter on the other company.
    expect(await caller().runs.count({ search: "t" })).toEqual({ total: 1, totalCapped: false });
    expect(await caller().runs.count({ companyId: "co-b" })).toEqual({ total: 0, totalCapped: false });
    expect((await caller().runs.failureGroups({})).map((g) => g.count)).toEqual([1]);
    expect((await caller().runs.facets()).companies).toEqual(["co-a"]);
    expect((await caller().waves.list()).map((w) => w.id)).toEqual(["w-20261112T000000-s1"]);
    expect((await caller().audit.list({})).items.map((e) => e.targetId)).toEqual([runA]);
  });

  it("answers another company's run, by its id, exactly like a run that does not exist", async () => {
    expect(await code(caller().runs.get({ id: runB }))).toBe("NOT_FOUND");
    expect(await code(caller().runs.evidence({ id: runB }))).toBe("NOT_FOUND");
    expect(await code(caller().waves.get({ id: "w-20261112T000000-s2" }))).toBe("NOT_FOUND");
    expect(await code(caller().runs.get({ id: runA }))).toBe("OK");
  });

  it("cannot Retry another company's run, and no successor appears", async () => {
    expect(await code(caller().runs.retry({ runId: runB }))).toBe("NOT_FOUND");
    expect(await t.current.db.run.count({ where: { previousRunId: runB } })).toBe(0);
    const own = await caller().runs.retry({ runId: runA });
    expect(own.created).toBe(true);
  });

  it("cannot submit runs for another company", async () => {
    const operatorA = testUser("operator", ["co-a"]);
    expect(await code(caller(operatorA).runs.create({ companyId: "co-b", taskId: "x", agent: "a", provider: "codex" }))).toBe("FORBIDDEN");
    const refused = await t.current.db.auditEntry.findFirstOrThrow({ where: { action: "run.submit", outcome: "refused" } });
    expect(refused.companyId).toBe("co-b");
  });

  it("sees every company with *", async () => {
    const all = testUser("viewer");
    expect((await caller(all).runs.list({})).items).toHaveLength(3);
  });
});
