import { TRPCError } from "@trpc/server";
import crypto from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDb, type Db } from "../db/client";
import type { SessionUser } from "../shared/roles";
import { withTestDatabase } from "../test/context";
import { testUser } from "../test/users";
import { createCaller } from "../trpc/root";
import { createTRPCContext } from "../trpc/trpc";
import { retryRun } from "./retry";

/**
 * Bulk Retry (docs/rules.md §2.11) through the plans procedures, on the real database: a preview
 * that touches nothing, a confirmation that retries only what the preview admitted, exactly
 * one successor per run however many confirmations arrive at once, from two "servers" (two
 * connection pools).
 */

const t = withTestDatabase();
const OPERATOR = testUser("operator");
const CODE = "native_provider_startup_rejected";
const base = { instanceId: "inst-bulk", agent: "planner", provider: "codex", target: "remote" as const, sandboxMode: "warm" as const };
let second: Db;

const callerOn = (db: Db, user: SessionUser = OPERATOR) => createCaller(() => createTRPCContext({ user, headers: new Headers(), db }));
const caller = (user?: SessionUser) => callerOn(t.current.db, user);

async function trpcError(p: Promise<unknown>): Promise<TRPCError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(TRPCError);
  return err as TRPCError;
}

/** `n` runs of `companyId` that ended in a terminal failure with Retry, each its own task. */
async function failedRuns(n: number, companyId: string, tag: string, extra: Record<string, unknown> = {}): Promise<string[]> {
  const rows = Array.from({ length: n }, (_, i) => ({
    ...base,
    id: crypto.randomUUID(),
    companyId,
    taskId: `${tag}-${String(i).padStart(4, "0")}`,
    status: "failed" as const,
    outcome: "terminal_failure" as const,
    failureCode: CODE,
    canRetry: true,
    finishedAt: new Date(),
    ...extra,
  }));
  await t.current.db.run.createMany({ data: rows });
  return rows.map((r) => r.id);
}

const successorsOf = (ids: string[]) => t.current.db.run.count({ where: { previousRunId: { in: ids } } });

beforeAll(async () => {
  await t.current.db.instance.create({ data: { id: "inst-bulk", name: "bulk" } });
  second = createDb(t.current.url, { max: 10 });
});
afterAll(async () => {
  await second.$disconnect();
});

describe("bulk Retry", () => {
  it("40 failed runs, 50 concurrent confirmations from two servers: exactly 40 successors, the same per-run results on every answer, one audit entry", async () => {
    const ids = await failedRuns(40, "co-many", "many");
    const plan = await caller().plans.preview({ kind: "retry", filter: { failureCode: CODE, companyId: "co-many" } });
    expect(plan).toMatchObject({ kind: "retry", total: 40, admitted: 40, confirmWord: "retry 40", confirmedAt: null });
    expect(plan.items.map((i) => i.runId).sort()).toEqual([...ids].sort());
    expect(plan.counts).toMatchObject({ refusedAtPreview: 0, pending: 40 });
    // The preview touched nothing.
    expect(await successorsOf(ids)).toBe(0);

    const CONFIRMATIONS = 50;
    const started = performance.now();
    const answers = await Promise.all(Array.from({ length: CONFIRMATIONS }, (_, i) => callerOn(i % 2 === 0 ? t.current.db : second).plans.confirm({ planId: plan.id, confirm: "retry 40" })));
    const ms = performance.now() - started;
    const successors = await successorsOf(ids);
    console.log(`bulk retry: ${CONFIRMATIONS} concurrent confirmations (2 pools) of a 40-run plan → ${successors} successors in ${ms.toFixed(0)} ms`);
    expect(successors).toBe(40);

    const resultsOf = (a: (typeof answers)[number]) => a.items.map((i) => [i.runId, i.result, i.successorId]);
    for (const a of answers) {
      expect(a.counts).toMatchObject({ retried: 40, pending: 0, refused: 0 });
      expect(resultsOf(a)).toEqual(resultsOf(answers[0]!));
    }
    const made = await t.current.db.run.findMany({ where: { previousRunId: { in: ids } }, select: { id: true, previousRunId: true, status: true } });
    expect(new Set(made.map((r) => r.previousRunId)).size).toBe(40);
    expect(made.every((r) => r.status === "queued")).toBe(true);
    expect(answers[0]!.items.every((i) => made.some((m) => m.id === i.successorId && m.previousRunId === i.runId))).toBe(true);

    const stored = await caller().plans.get({ planId: plan.id });
    expect(stored.finishedAt).not.toBeNull();
    expect(stored.confirmedBy).toBe(OPERATOR.email);
    const entries = await t.current.db.auditEntry.findMany({ where: { targetId: plan.id }, orderBy: { id: "asc" } });
    const byAction = (a: string) => entries.filter((e) => e.action === a);
    expect(byAction("run.bulk_retry_preview")).toHaveLength(1);
    expect(byAction("run.bulk_retry")).toHaveLength(1);
    expect(byAction("run.bulk_confirm_repeat")).toHaveLength(CONFIRMATIONS - 1);
    const detail = byAction("run.bulk_retry")[0]!.detail as { runs: Array<{ runId: string; result: string; successorId: string }> };
    expect(detail.runs.map((r) => r.runId).sort()).toEqual([...ids].sort());
    expect(detail.runs.every((r) => r.result === "retried" && r.successorId)).toBe(true);
    // No single-run Retry entries: the plan's one entry holds them all.
    expect(await t.current.db.auditEntry.count({ where: { action: "run.retry", targetId: { in: ids } } })).toBe(0);
  });

  it("a run retried by someone else between the preview and the confirmation is refused with its reason, not retried twice", async () => {
    const ids = await failedRuns(3, "co-race", "race");
    const plan = await caller().plans.preview({ kind: "retry", filter: { failureCode: CODE, companyId: "co-race" } });
    expect(plan.admitted).toBe(3);
    const single = await retryRun(t.current.db, ids[1]!, { id: "someone@else", role: "board" });
    expect(single.created).toBe(true);

    const done = await caller().plans.confirm({ planId: plan.id, confirm: "retry 3" });
    const raced = done.items.find((i) => i.runId === ids[1])!;
    expect(raced).toMatchObject({ result: "refused", resultReason: "existing_successor", successorId: null });
    expect(raced.resultDetail).toContain(single.run.id);
    expect(done.counts).toMatchObject({ retried: 2, refused: 1, pending: 0 });
    expect(await t.current.db.run.count({ where: { previousRunId: ids[1] } })).toBe(1);
    expect(await successorsOf(ids)).toBe(3);
  });

  it("two failed runs of one task in a plan: under 10 concurrent confirmations one is retried, the other refused as its task is busy", async () => {
    const [older] = await failedRuns(1, "co-task", "same-task");
    const [newer] = await failedRuns(1, "co-task", "same-task");
    const plan = await caller().plans.preview({ kind: "retry", filter: { companyId: "co-task" } });
    expect(plan.admitted).toBe(2);
    const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => callerOn(i % 2 ? second : t.current.db).plans.confirm({ planId: plan.id, confirm: "retry 2" })));
    expect(await successorsOf([older!, newer!])).toBe(1);
    expect(await t.current.db.run.count({ where: { companyId: "co-task", taskId: "same-task-0000", status: "queued" } })).toBe(1);
    for (const a of answers) {
      expect(a.counts).toMatchObject({ retried: 1, refused: 1, pending: 0 });
      expect(a.items.find((i) => i.result === "refused")?.resultReason).toBe("task_busy");
    }
  });

  it("a run refused at the preview is never retried, even once it could be", async () => {
    const [ok] = await failedRuns(1, "co-mixed", "mixed-ok");
    const [noRetry] = await failedRuns(1, "co-mixed", "mixed-no-retry", { canRetry: false, failureCode: "native_remote_recovery_lease_mismatch" });
    const [busy] = await failedRuns(1, "co-mixed", "mixed-busy");
    const live = await t.current.db.run.create({ data: { ...base, companyId: "co-mixed", taskId: "mixed-busy-0000", status: "running" } });
    await t.current.db.run.create({ data: { ...base, companyId: "co-mixed", taskId: "mixed-fine", status: "succeeded" } });

    const plan = await caller().plans.preview({ kind: "retry", filter: { companyId: "co-mixed" } });
    // The task's running run is in the set too (a Retry refuses it: it has not ended).
    expect(plan.total).toBe(5);
    expect(plan.admitted).toBe(1);
    expect(plan.confirmWord).toBe("retry 1");
    const item = (id: string) => plan.items.find((i) => i.runId === id)!;
    expect(item(ok!)).toMatchObject({ admitted: true, reason: null });
    expect(item(noRetry!)).toMatchObject({ admitted: false, reason: "retry_not_offered" });
    expect(item(busy!)).toMatchObject({ admitted: false, reason: "task_busy" });
    expect(item(busy!).refusal).toContain(live.id);
    expect(plan.items.find((i) => i.status === "succeeded")).toMatchObject({ admitted: false, reason: "not_terminal_failure" });
    expect(item(live.id)).toMatchObject({ admitted: false, reason: "not_terminal_failure" });

    // The busy task's other run ends: a Retry of `busy` would now be admitted, but this plan did not admit it.
    await t.current.db.run.update({ where: { id: live.id }, data: { status: "succeeded" } });
    const done = await caller().plans.confirm({ planId: plan.id, confirm: "retry 1" });
    expect(done.counts).toMatchObject({ retried: 1, refusedAtPreview: 4, pending: 0 });
    expect(done.items.filter((i) => !i.admitted).every((i) => i.result === null)).toBe(true);
    expect(await successorsOf([noRetry!, busy!])).toBe(0);
    expect(await successorsOf([ok!])).toBe(1);
  });

  it("never every run: a filter is required; past 1,000 runs the answer says how many matched and to narrow the filter", async () => {
    const none = await trpcError(caller().plans.preview({ kind: "retry", filter: {} }));
    expect(none.code).toBe("BAD_REQUEST");
    expect(none.message).toMatch(/at least one filter/);

    await failedRuns(1001, "co-huge", "huge");
    const huge = await trpcError(caller().plans.preview({ kind: "retry", filter: { companyId: "co-huge" } }));
    expect(huge.code).toBe("PRECONDITION_FAILED");
    expect(huge.message).toBe("1,001 runs match this filter; a plan takes at most 1,000. Narrow the filter (a company, a time range, a status) and preview again.");
    expect(await t.current.db.bulkPlan.count({ where: { selector: { path: ["companyId"], equals: "co-huge" } } })).toBe(0);

    const empty = await trpcError(caller().plans.preview({ kind: "retry", filter: { companyId: "co-nobody" } }));
    expect(empty.code).toBe("PRECONDITION_FAILED");
    expect(empty.message).toMatch(/^No run matches this filter/);
  });

  it("a wrong word and an expired preview are refused, audited, and retry nothing; an unknown plan is NOT_FOUND", async () => {
    const ids = await failedRuns(2, "co-exp", "exp");
    const plan = await caller().plans.preview({ kind: "retry", filter: { companyId: "co-exp" } });
    const wrong = await trpcError(caller().plans.confirm({ planId: plan.id, confirm: "retry 3" }));
    expect(wrong.code).toBe("BAD_REQUEST");
    expect(wrong.message).toBe('Type "retry 2" to retry the runs this plan admitted.');

    await t.current.db.bulkPlan.update({ where: { id: plan.id }, data: { expiresAt: new Date(Date.now() - 1000) } });
    const expired = await trpcError(caller().plans.confirm({ planId: plan.id, confirm: "retry 2" }));
    expect(expired.code).toBe("PRECONDITION_FAILED");
    expect(expired.message).toMatch(/expired .* preview the set again/);
    expect(await successorsOf(ids)).toBe(0);
    const refusals = await t.current.db.auditEntry.findMany({ where: { targetId: plan.id, action: "run.bulk_retry" } });
    expect(refusals.map((r) => [r.outcome, (r.detail as { reason: string }).reason]).sort()).toEqual([
      ["refused", "expired"],
      ["refused", "wrong_word"],
    ]);

    expect((await trpcError(caller().plans.confirm({ planId: crypto.randomUUID(), confirm: "retry 2" }))).code).toBe("NOT_FOUND");
  });

  it("a confirmed plan answers its results again after its expiry, retrying nothing more", async () => {
    const ids = await failedRuns(2, "co-again", "again");
    const plan = await caller().plans.preview({ kind: "retry", filter: { companyId: "co-again" } });
    const first = await caller().plans.confirm({ planId: plan.id, confirm: "retry 2" });
    await t.current.db.bulkPlan.update({ where: { id: plan.id }, data: { expiresAt: new Date(Date.now() - 1000) } });
    const again = await caller().plans.confirm({ planId: plan.id, confirm: "retry 2" });
    expect(again.items.map((i) => i.successorId)).toEqual(first.items.map((i) => i.successorId));
    expect(await successorsOf(ids)).toBe(2);
  });

  it("scope: a person sees and plans only their companies' runs; another company's plan is refused to them", async () => {
    await failedRuns(2, "co-a", "scope-a");
    await failedRuns(1, "co-b", "scope-b");
    const opA = testUser("operator", ["co-a"]);
    const opB = testUser("operator", ["co-b"]);
    const mine = await caller(opA).plans.preview({ kind: "retry", filter: { failureCode: CODE } });
    expect(mine.total).toBe(2);
    expect(mine.items.every((i) => i.companyId === "co-a")).toBe(true);

    const theirs = await trpcError(caller(opB).plans.confirm({ planId: mine.id, confirm: mine.confirmWord }));
    expect(theirs.code).toBe("FORBIDDEN");
    expect(theirs.message).toMatch(/outside yours/);
    expect((await trpcError(caller(opB).plans.get({ planId: mine.id }))).code).toBe("NOT_FOUND");
    expect((await trpcError(caller(testUser("board")).plans.preview({ kind: "retry", filter: { failureCode: CODE } }))).code).toBe("FORBIDDEN");

    const done = await caller(opA).plans.confirm({ planId: mine.id, confirm: mine.confirmWord });
    expect(done.counts.retried).toBe(2);
  });
});

describe("bulk Cancel", () => {
  it("cancels only the runs that have not ended, each once under 10 concurrent confirmations, with who and why; the cancelled runs then offer a bulk Retry", async () => {
    const queued = Array.from({ length: 5 }, () => crypto.randomUUID());
    await t.current.db.run.createMany({ data: queued.map((id, i) => ({ ...base, id, companyId: "co-cancel", taskId: `cancel-${i}`, status: "queued" as const })) });
    const [ended] = await failedRuns(1, "co-cancel", "cancel-ended");
    const plan = await caller().plans.preview({ kind: "cancel", filter: { companyId: "co-cancel" }, reason: "incident 42" });
    expect(plan).toMatchObject({ kind: "cancel", total: 6, admitted: 5, confirmWord: "cancel 5", reason: "incident 42" });
    expect(plan.items.find((i) => i.runId === ended)).toMatchObject({ admitted: false, reason: "already_ended" });
    expect(await t.current.db.run.count({ where: { id: { in: queued }, status: "queued" } })).toBe(5);

    const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => callerOn(i % 2 ? second : t.current.db).plans.confirm({ planId: plan.id, confirm: "cancel 5" })));
    for (const a of answers) expect(a.counts).toMatchObject({ cancelled: 5, refused: 0, pending: 0, refusedAtPreview: 1 });
    const runs = await t.current.db.run.findMany({ where: { id: { in: queued } } });
    expect(runs.every((r) => r.status === "cancelled" && r.cancelledBy === OPERATOR.email && r.cancelReason === "incident 42" && r.executorEpoch === 1)).toBe(true);
    expect(await t.current.db.runEvent.count({ where: { runId: { in: queued }, type: "cancelled" } })).toBe(5);
    expect((await t.current.db.run.findUniqueOrThrow({ where: { id: ended } })).status).toBe("failed");
    expect(await t.current.db.auditEntry.count({ where: { action: "run.bulk_cancel", targetId: plan.id, outcome: "ok" } })).toBe(1);
    expect(await t.current.db.auditEntry.count({ where: { action: "run.cancel", targetId: { in: queued }, outcome: "ok" } })).toBe(5);

    const again = await caller().plans.preview({ kind: "retry", filter: { companyId: "co-cancel", status: "cancelled" } });
    expect(again).toMatchObject({ total: 5, admitted: 5 });
  });
});
