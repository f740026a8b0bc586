import { TRPCError } from "@trpc/server";
import { spawnSync } from "node:child_process";
import crypto from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import type { ZodError } from "zod";
import { describeFailure } from "../../engine";
import { startupFailure } from "../../test/evidence";
import { listRuns } from "../../runs/queries";
import { withTestDatabase } from "../../test/context";
import { createCaller } from "../root";
import { createTRPCContext } from "../trpc";
import { TEST_ADMIN, testUser } from "../../test/users";

const t = withTestDatabase();
const caller = () => createCaller(() => createTRPCContext({ user: TEST_ADMIN, headers: new Headers(), db: t.current.db }));

async function trpcError(p: Promise<unknown>): Promise<TRPCError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(TRPCError);
  return err as TRPCError;
}

const base = { instanceId: "inst-a", agent: "planner", provider: "codex", target: "remote" as const, sandboxMode: "warm" as const };
const T0 = new Date("2026-11-12T00:00:00.000Z");
const REJECTED = "native_provider_startup_rejected";
const INTERRUPTED = "native_session_interrupted";

beforeAll(async () => {
  const { db } = t.current;
  await db.instance.create({ data: { id: "inst-a", name: "a" } });
  // 30 runs over 3 companies; runs 10..19 share one createdAt to test ties across pages.
  const rows = Array.from({ length: 30 }, (_, i) => {
    const failed = i % 3 === 0;
    const retrying = i % 5 === 1;
    return {
      ...base,
      id: crypto.randomUUID(),
      companyId: `co-${i % 3}`,
      taskId: `task-${String(i).padStart(2, "0")}`,
      provider: i % 4 === 0 ? "claude" : "codex",
      target: i % 2 === 0 ? ("remote" as const) : ("local" as const),
      status: failed ? ("failed" as const) : retrying ? ("queued" as const) : ("succeeded" as const),
      outcome: failed ? ("terminal_failure" as const) : retrying ? ("retryable_failure" as const) : null,
      failureCode: failed ? REJECTED : retrying ? INTERRUPTED : null,
      canRetry: failed,
      createdAt: i >= 10 && i < 20 ? new Date(T0.getTime() + 10 * 60_000) : new Date(T0.getTime() + i * 60_000),
    };
  });
  await db.run.createMany({ data: rows });
});

describe("runs.list", () => {
  it("pages through every run exactly once, newest first, even across equal createdAt", async () => {
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    for (;;) {
      const page = await caller().runs.list({ pageSize: 7, cursor });
      pages += 1;
      seen.push(...page.items.map((r) => r.id));
      if (!page.nextCursor) break;
      cursor = page.nextCursor;
    }
    expect(pages).toBe(5);
    expect(new Set(seen).size).toBe(30);
    expect(seen).toHaveLength(30);
    const all = await t.current.db.run.findMany({ orderBy: [{ createdAt: "desc" }, { id: "desc" }], select: { id: true } });
    expect(seen).toEqual(all.map((r) => r.id));
  });

  it("a run created after the first page was read does not shift later pages", async () => {
    const first = await caller().runs.list({ pageSize: 10 });
    await t.current.db.run.create({ data: { ...base, companyId: "co-late", taskId: "late", createdAt: new Date(T0.getTime() + 3600_000) } });
    const second = await caller().runs.list({ pageSize: 10, cursor: first.nextCursor! });
    expect(second.items.map((r) => r.id)).not.toContain(first.items[0]!.id);
    const firstIds = new Set(first.items.map((r) => r.id));
    expect(second.items.some((r) => firstIds.has(r.id))).toBe(false);
    await t.current.db.run.deleteMany({ where: { companyId: "co-late" } });
  });

  it("filters by status, outcome, code, company, provider, target and search", async () => {
    const c = caller();
    const failed = await c.runs.list({ status: "failed", pageSize: 100 });
    expect(failed.items).toHaveLength(10);
    expect(failed.items.every((r) => r.status === "failed" && r.failureMessage === describeFailure(REJECTED)!.message)).toBe(true);

    expect((await c.runs.list({ outcome: "retryable_failure", pageSize: 100 })).items.every((r) => r.failureCode === INTERRUPTED)).toBe(true);
    expect((await c.runs.list({ failureCode: INTERRUPTED, pageSize: 100 })).items).toHaveLength(4);

    const combined = await c.runs.list({ companyId: "co-0", provider: "claude", target: "remote", pageSize: 100 });
    // i ≡ 0 (mod 3), i ≡ 0 (mod 4), even → i ∈ {0, 12, 24}
    expect(combined.items.map((r) => r.taskId).sort()).toEqual(["task-00", "task-12", "task-24"]);

    expect((await c.runs.list({ search: "TASK-2", pageSize: 100 })).items).toHaveLength(10);
    const one = failed.items[0]!;
    expect((await c.runs.list({ search: one.id.toUpperCase() })).items.map((r) => r.id)).toEqual([one.id]);
  });

  it("filters by time range", async () => {
    const c = caller();
    const window = await c.runs.list({ createdFrom: new Date(T0.getTime() + 25 * 60_000), createdTo: new Date(T0.getTime() + 27 * 60_000) });
    expect(window.items.map((r) => r.taskId)).toEqual(["task-27", "task-26", "task-25"]);
    // A preset range is measured from when the query runs.
    const recent = await listRuns(t.current.db, { all: true }, { range: "1h", pageSize: 100 }, new Date(T0.getTime() + 85 * 60_000));
    expect(recent.items.map((r) => r.taskId)).toEqual(["task-29", "task-28", "task-27", "task-26", "task-25"]);
  });

  it("answers BAD_REQUEST naming the field for bad filters and cursors", async () => {
    const c = caller();
    const badStatus = await trpcError(c.runs.list({ status: "exploded" } as never));
    expect(badStatus.code).toBe("BAD_REQUEST");
    expect((badStatus.cause as ZodError).issues[0]?.path).toEqual(["status"]);

    const badCursor = await trpcError(c.runs.list({ cursor: "not-a-cursor" }));
    expect(badCursor.code).toBe("BAD_REQUEST");
    expect((badCursor.cause as ZodError).issues[0]?.path).toEqual(["cursor"]);

    const badRange = await trpcError(c.runs.list({ createdFrom: new Date(T0.getTime() + 1000), createdTo: T0 }));
    expect((badRange.cause as ZodError).issues[0]?.path).toEqual(["createdTo"]);

    const badSize = await trpcError(c.runs.list({ pageSize: 1000 }));
    expect((badSize.cause as ZodError).issues[0]?.path).toEqual(["pageSize"]);
  });
});

describe("runs.count", () => {
  it("counts the list's filters over all pages, exactly from the rollup or by a capped count, whatever page the list is on", async () => {
    const c = caller();
    expect(await c.runs.count()).toEqual({ total: 30, totalCapped: false });
    expect(await c.runs.count({})).toEqual({ total: 30, totalCapped: false });
    expect(await c.runs.count({ status: "failed" })).toEqual({ total: 10, totalCapped: false });
    expect(await c.runs.count({ failureCode: INTERRUPTED })).toEqual({ total: 4, totalCapped: false });
    expect(await c.runs.count({ companyId: "co-0", provider: "claude", target: "remote" })).toEqual({ total: 3, totalCapped: false });
    expect(await c.runs.count({ search: "TASK-2" })).toEqual({ total: 10, totalCapped: false });
    expect(await c.runs.count({ createdFrom: new Date(T0.getTime() + 25 * 60_000), createdTo: new Date(T0.getTime() + 27 * 60_000) })).toEqual({ total: 3, totalCapped: false });
    // A board user of one company counts that company's runs only, even when filtering on another.
    const board = createCaller(() => createTRPCContext({ user: testUser("board", ["co-1"]), headers: new Headers(), db: t.current.db }));
    expect(await board.runs.count()).toEqual({ total: 10, totalCapped: false });
    expect(await board.runs.count({ companyId: "co-0" })).toEqual({ total: 0, totalCapped: false });
    expect(await board.runs.count({ companyId: "co-0", search: "task" })).toEqual({ total: 0, totalCapped: false });
    expect(await board.runs.count({ search: "task" })).toEqual({ total: 10, totalCapped: false });
  });

  it("answers BAD_REQUEST naming the field for bad filters, and takes no cursor", async () => {
    const c = caller();
    const badRange = await trpcError(c.runs.count({ createdFrom: new Date(T0.getTime() + 1000), createdTo: T0 }));
    expect(badRange.code).toBe("BAD_REQUEST");
    expect((badRange.cause as ZodError).issues[0]?.path).toEqual(["createdTo"]);
    const badStatus = await trpcError(c.runs.count({ status: "exploded" } as never));
    expect((badStatus.cause as ZodError).issues[0]?.path).toEqual(["status"]);
    // The count is keyed by the filters alone: a cursor or a page size is not part of it.
    expect(await c.runs.count({ cursor: "anything", pageSize: 5 } as never)).toEqual({ total: 30, totalCapped: false });
  });
});

describe("runs.failureGroups", () => {
  it("groups failures by code with counts and the catalogue's sentence", async () => {
    const groups = await caller().runs.failureGroups();
    expect(groups.map((g) => [g.code, g.count])).toEqual([
      [REJECTED, 10],
      [INTERRUPTED, 4],
    ]);
    expect(groups[0]).toMatchObject({ open: 10, canRetry: true, message: describeFailure(REJECTED)!.message, nextAction: describeFailure(REJECTED)!.nextAction });
    expect(groups[1]).toMatchObject({ open: 0, outcome: "retryable_failure" });
  });

  it("respects the other filters", async () => {
    const groups = await caller().runs.failureGroups({ companyId: "co-1" });
    // co-1 holds i ≡ 1 (mod 3): i % 5 === 1 → 1, 16 (the failed ones are i ≡ 0 mod 3).
    expect(groups).toEqual([expect.objectContaining({ code: INTERRUPTED, count: 2 })]);
  });

  it("describes an unknown code without offering Retry", async () => {
    await t.current.db.run.create({ data: { ...base, companyId: "co-x", taskId: "weird", status: "failed", outcome: "terminal_failure", failureCode: "from_the_future" } });
    const groups = await caller().runs.failureGroups({ companyId: "co-x" });
    expect(groups[0]).toMatchObject({ code: "from_the_future", known: false, canRetry: false });
    await t.current.db.run.deleteMany({ where: { companyId: "co-x" } });
  });
});

describe("runs.get and runs.evidence", () => {
  it("returns the run with its catalogue entry, timeline, claims, proofs as recorded, leases and lineage", async () => {
    const { db } = t.current;
    const first = await db.run.create({ data: { ...base, companyId: "co-d", taskId: "detail", status: "failed", outcome: "terminal_failure", failureCode: REJECTED, canRetry: true } });
    const second = await db.run.create({ data: { ...base, companyId: "co-d", taskId: "detail", status: "failed", outcome: "terminal_failure", failureCode: REJECTED, canRetry: true, previousRunId: first.id, lastRunnerState: { lifecycle: "connecting", reconnectCount: 0 }, lastRunnerStateAt: new Date() } });
    await db.runEvent.createMany({ data: [{ runId: second.id, type: "created" }, { runId: second.id, type: "startup_failed", data: { attempt: 1 } }] });
    const claim = await db.recoveryClaim.create({ data: { runId: second.id, kind: "bootstrap_incomplete", controllerBootId: "b-2", restartKind: "hard", disposition: "refused" } });
    // Checks stored exactly as recorded, including ones without expected/actual.
    const checks = [
      { name: "definite_failure", ok: true, expected: true, actual: true },
      { name: "remote_target", ok: false, expected: "remote", actual: "local" },
      { name: "rejection_rule", ok: true },
    ];
    const evidence = startupFailure();
    await db.proof.create({ data: { kind: "startup_failure", verdict: "terminal_failure", code: REJECTED, reason: "requires_action", checks, evidence, output: {}, runId: second.id, claimId: claim.id, evaluatedBy: "b-2" } });
    await db.environmentLease.create({
      data: {
        runId: second.id,
        instanceId: "inst-a",
        companyId: "co-d",
        provider: "emulator",
        providerLeaseId: "sbx-1",
        sandboxName: "rw-create-x",
        acquisitionOutcome: "created",
        status: "pending_cleanup",
        claimAttemptId: "att-1",
        claimRecord: { attemptId: "att-1", claimer: { bootId: "b-2", pid: 1 } },
        fencedUntil: new Date(Date.now() + 60_000),
      },
    });

    const d = await caller().runs.get({ id: second.id });
    expect(d.run).toMatchObject({ id: second.id, status: "failed", failureCode: REJECTED });
    expect(d.failure).toMatchObject({ code: REJECTED, canRetry: true, nextAction: describeFailure(REJECTED)!.nextAction });
    expect(d.retry).toEqual({ blocker: null, successorId: null, current: null });
    expect(d.events.map((e) => e.type)).toEqual(["created", "startup_failed"]);
    expect(d.claims).toEqual([expect.objectContaining({ id: claim.id, kind: "bootstrap_incomplete", proofIds: [d.proofs[0]!.id] })]);
    expect(d.proofs[0]!.checks).toEqual(checks);
    expect(d.proofs[0]!.checks![2]).not.toHaveProperty("expected");
    expect(d.leases[0]).toMatchObject({ acquisitionOutcome: "created", status: "pending_cleanup", teardownClaim: { attemptId: "att-1", record: { attemptId: "att-1" } } });
    expect(d.runnerState.state).toEqual({ lifecycle: "connecting", reconnectCount: 0 });
    expect(d.lineage.previous.map((r) => r.id)).toEqual([first.id]);
    expect(d.lineage.next).toEqual([]);

    const back = await caller().runs.get({ id: first.id });
    expect(back.lineage.next.map((r) => r.id)).toEqual([second.id]);
    expect(back.retry.successorId).toBe(second.id);
    // The old run follows its successor: its live status and code, with the code's sentence.
    expect(back.retry.current).toMatchObject({ id: second.id, status: "failed", failureCode: REJECTED, failureMessage: describeFailure(REJECTED)!.message, hops: 1 });
    await t.current.db.run.update({ where: { id: second.id }, data: { status: "running", failureCode: null, outcome: null } });
    expect((await caller().runs.get({ id: first.id })).retry.current).toMatchObject({ id: second.id, status: "running", failureCode: null, failureMessage: null });
    await t.current.db.run.update({ where: { id: second.id }, data: { status: "failed", failureCode: REJECTED, outcome: "terminal_failure" } });

    const bundles = await caller().runs.evidence({ id: second.id });
    expect(bundles).toHaveLength(1);
    expect(bundles[0]!.evidence).toEqual(evidence);
  });

  it("downloads bundles that runwarden decide accepts, with the verdict that was recorded", async () => {
    const { db } = t.current;
    const run = await db.run.create({ data: { ...base, companyId: "co-e", taskId: "evidence" } });
    const evidence = startupFailure();
    await db.proof.create({ data: { kind: "startup_failure", verdict: "terminal_failure", code: REJECTED, checks: [], evidence, output: {}, runId: run.id, evaluatedBy: "b" } });
    const [bundle] = await caller().runs.evidence({ id: run.id });
    const cli = spawnSync(process.execPath, ["node_modules/tsx/dist/cli.mjs", "server/cli/runwarden.ts", "decide", "-"], { input: JSON.stringify(bundle!.evidence), encoding: "utf8" });
    expect(cli.stderr).toBe("");
    expect(cli.status).toBe(0);
    expect(JSON.parse(cli.stdout)).toMatchObject({ kind: "startup_failure", verdict: "terminal_failure", code: REJECTED });
  });

  it("shows unreadable stored checks verbatim instead of failing", async () => {
    const { db } = t.current;
    const run = await db.run.create({ data: { ...base, companyId: "co-f", taskId: "odd" } });
    await db.proof.create({ data: { kind: "old_kind", verdict: "x", checks: { not: "a list" }, evidence: {}, output: {}, runId: run.id, evaluatedBy: "b" } });
    const d = await caller().runs.get({ id: run.id });
    expect(d.proofs[0]).toMatchObject({ checks: null, checksRaw: { not: "a list" } });
  });

  it("gives NOT_FOUND for an unknown run and BAD_REQUEST naming the field for a malformed id", async () => {
    expect((await trpcError(caller().runs.get({ id: crypto.randomUUID() }))).code).toBe("NOT_FOUND");
    const bad = await trpcError(caller().runs.get({ id: "nope" }));
    expect(bad.code).toBe("BAD_REQUEST");
    expect((bad.cause as ZodError).issues[0]?.path).toEqual(["id"]);
    expect((await trpcError(caller().runs.evidence({ id: crypto.randomUUID() }))).code).toBe("NOT_FOUND");
  });
});

describe("runs.retry through the router", () => {
  it("two failed runs of one task retried at once: one successor, the other a CONFLICT a board user can read, with its audit entry, never a 500", async () => {
    const { db } = t.current;
    const failed = { ...base, companyId: "co-r", status: "failed" as const, outcome: "terminal_failure" as const, failureCode: REJECTED, canRetry: true };
    // Many tasks at once, so the two Retries of a task meet inside their transactions; the
    // first run of each task is also retried twice (a double click): it answers one successor.
    const tasks = await Promise.all(
      Array.from({ length: 6 }, async (_, i) => {
        const taskId = `retry-race-${i}`;
        const a = await db.run.create({ data: { ...failed, taskId } });
        const b = await db.run.create({ data: { ...failed, taskId } });
        return { taskId, a, b };
      }),
    );
    const settle = (runId: string) => caller().runs.retry({ runId }).then((r) => ({ runId, ok: r }), (err: unknown) => ({ runId, err }));
    const outcomes = await Promise.all(tasks.flatMap(({ a, b }) => [settle(a.id), settle(b.id), settle(a.id)]));
    for (const { taskId, a, b } of tasks) {
      const mine = outcomes.filter((o) => o.runId === a.id || o.runId === b.id);
      const successors = await db.run.findMany({ where: { taskId, previousRunId: { not: null } } });
      expect(successors).toHaveLength(1);
      const successor = successors[0]!;
      for (const o of mine) {
        if ("ok" in o) {
          expect(o.runId).toBe(successor.previousRunId);
          expect(o.ok.run.id).toBe(successor.id);
          continue;
        }
        // The loser's Retry: a plain refusal naming the run that holds the task.
        expect(o.err).toBeInstanceOf(TRPCError);
        expect((o.err as TRPCError).code).toBe("CONFLICT");
        expect((o.err as TRPCError).message).toBe(`Task ${taskId} already has a run that is queued (${successor.id}).`);
        expect(o.runId).not.toBe(successor.previousRunId);
      }
      expect(mine.filter((o) => "ok" in o && o.ok.created)).toHaveLength(1);
      const loser = successor.previousRunId === a.id ? b : a;
      const audits = await db.auditEntry.findMany({ where: { action: "run.retry", targetId: { in: [a.id, b.id] } } });
      expect(audits).toHaveLength(3);
      expect(audits.filter((e) => e.outcome === "refused").map((e) => e.targetId)).toEqual(mine.filter((o) => "err" in o).map(() => loser.id));
      expect(audits.filter((e) => e.outcome === "ok").every((e) => e.targetId === successor.previousRunId)).toBe(true);
    }
  });

  it("makes exactly one successor under twenty concurrent calls, and says why when Retry is not offered", async () => {
    const { db } = t.current;
    const run = await db.run.create({ data: { ...base, companyId: "co-r", taskId: "retry-once", status: "failed", outcome: "terminal_failure", failureCode: REJECTED, canRetry: true } });
    const results = await Promise.all(Array.from({ length: 20 }, () => caller().runs.retry({ runId: run.id })));
    expect(new Set(results.map((r) => r.run.id)).size).toBe(1);
    expect(results.filter((r) => r.created)).toHaveLength(1);
    expect(await db.run.count({ where: { previousRunId: run.id } })).toBe(1);
    expect(await db.auditEntry.count({ where: { action: "run.retry", targetId: run.id } })).toBe(20);

    const d = await caller().runs.get({ id: run.id });
    expect(d.retry.successorId).toBe(results[0]!.run.id);

    // Retry is not offered while the task has another active run, and says so.
    const busy = await db.run.create({ data: { ...base, companyId: "co-r", taskId: "busy", status: "failed", outcome: "terminal_failure", failureCode: REJECTED, canRetry: true } });
    const active = await db.run.create({ data: { ...base, companyId: "co-r", taskId: "busy", status: "running" } });
    expect((await caller().runs.get({ id: busy.id })).retry.blocker).toBe(`Task busy already has a run that is running (${active.id}).`);
    const refused = await trpcError(caller().runs.retry({ runId: busy.id }));
    expect(refused.message).toBe(`Task busy already has a run that is running (${active.id}).`);

    const held = await db.run.create({ data: { ...base, companyId: "co-r", taskId: "held", status: "failed", outcome: "terminal_failure", failureCode: "ambiguous_remote_recovery_evidence", canRetry: false } });
    const blocked = await caller().runs.get({ id: held.id });
    expect(blocked.retry.blocker).toBe(describeFailure("ambiguous_remote_recovery_evidence")!.nextAction);
    expect((await trpcError(caller().runs.retry({ runId: held.id }))).code).toBe("PRECONDITION_FAILED");
  });
});
