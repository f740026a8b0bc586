import { beforeAll, describe, expect, it } from "vitest";
import { withTestDatabase } from "../test/context";
import { EXECUTING_RUN_STATUSES, LIVE_RUN_STATUSES } from "../engine";
import { Prisma } from "./client";

const t = withTestDatabase();

const base = {
  instanceId: "inst-a",
  companyId: "co-1",
  agent: "planner",
  provider: "codex",
  target: "remote" as const,
  sandboxMode: "per_turn" as const,
};

function isUniqueViolation(err: unknown): boolean {
  return err instanceof Prisma.PrismaClientKnownRequestError && err.code === "P2002";
}

beforeAll(async () => {
  await t.current.db.instance.create({ data: { id: "inst-a", name: "test instance" } });
});

describe("domain constraints", () => {
  it("allows at most one active run per task", async () => {
    const { db } = t.current;
    await db.run.create({ data: { ...base, taskId: "task-1", status: "running" } });
    const second = await db.run.create({ data: { ...base, taskId: "task-1", status: "queued" } }).catch((e: unknown) => e);
    expect(isUniqueViolation(second)).toBe(true);
    // Another company's task of the same name is a different task.
    await expect(db.run.create({ data: { ...base, companyId: "co-2", taskId: "task-1" } })).resolves.toBeTruthy();
  });

  it("lets a finished run's task start again", async () => {
    const { db } = t.current;
    await db.run.create({ data: { ...base, taskId: "task-2", status: "failed", outcome: "terminal_failure" } });
    await expect(db.run.create({ data: { ...base, taskId: "task-2", status: "queued" } })).resolves.toBeTruthy();
  });

  it("gives a run at most one retry successor", async () => {
    const { db } = t.current;
    const first = await db.run.create({ data: { ...base, taskId: "task-3", status: "failed", outcome: "terminal_failure", canRetry: true } });
    const retry = await db.run.create({ data: { ...base, taskId: "task-3", previousRunId: first.id, status: "failed" } });
    const again = await db.run.create({ data: { ...base, taskId: "task-3", previousRunId: first.id } }).catch((e: unknown) => e);
    expect(isUniqueViolation(again)).toBe(true);
    const lineage = await db.run.findUniqueOrThrow({ where: { id: first.id }, include: { nextRun: true } });
    expect(lineage.nextRun?.id).toBe(retry.id);
  });

  it("keeps one creation intent per exact creation name and one lease per intent", async () => {
    const { db } = t.current;
    const now = new Date();
    const intent = {
      instanceId: "inst-a",
      companyId: "co-1",
      runId: "probe-run-that-does-not-exist",
      labels: { instance: "inst-a", company: "co-1", operation: "op-1" },
      settleDeadline: now,
      nextAttemptAt: now,
    };
    await db.sandboxCreationIntent.create({ data: { ...intent, id: "op-1", creationName: "rw-create-op-1" } });
    const dup = await db.sandboxCreationIntent.create({ data: { ...intent, id: "op-2", creationName: "rw-create-op-1" } }).catch((e: unknown) => e);
    expect(isUniqueViolation(dup)).toBe(true);

    const lease = { instanceId: "inst-a", companyId: "co-1", provider: "emulator", acquisitionOutcome: "created" as const, intentId: "op-1" };
    await db.environmentLease.create({ data: lease });
    const dupLease = await db.environmentLease.create({ data: lease }).catch((e: unknown) => e);
    expect(isUniqueViolation(dupLease)).toBe(true);
  });

  it("stores proofs with every check as recorded", async () => {
    const { db } = t.current;
    const checks = [
      { name: "same_provider_lease", ok: true, expected: "sbx-1", actual: "sbx-1" },
      { name: "not_replacement", ok: false, expected: "created|resumed", actual: "replacement" },
    ];
    const proof = await db.proof.create({
      data: { kind: "lease_binding", verdict: "refused", code: "native_remote_recovery_lease_mismatch", checks, evidence: {}, output: {}, evaluatedBy: "test" },
    });
    const read = await db.proof.findUniqueOrThrow({ where: { id: proof.id } });
    expect(read.checks).toEqual(checks);
  });
});

describe("the status lists the database's partial indexes spell out", () => {
  // The indexes cannot import the engine's lists; this keeps the two spellings one meaning.
  async function predicateStatuses(index: string): Promise<string[]> {
    const rows = await t.current.db.$queryRaw<{ def: string }[]>`SELECT pg_get_expr(indpred, indrelid) AS def FROM pg_index WHERE indexrelid = ${index}::regclass`;
    const def = rows[0]?.def;
    if (!def) throw new Error(`index ${index} has no predicate`);
    return [...def.matchAll(/'([a-z_]+)'/g)].map((m) => m[1]!).sort();
  }

  it("runs_executing_by_instance is EXECUTING_RUN_STATUSES (the recovery poll reads it)", async () => {
    expect(await predicateStatuses("runs_executing_by_instance")).toEqual([...EXECUTING_RUN_STATUSES].sort());
  });

  it("runs_one_active_per_task is LIVE_RUN_STATUSES (one live run per task)", async () => {
    expect(await predicateStatuses("runs_one_active_per_task")).toEqual([...LIVE_RUN_STATUSES].sort());
  });
});
