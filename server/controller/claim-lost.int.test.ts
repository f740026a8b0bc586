import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Prisma, type Db, type Run } from "../db/client";
import { submitRun } from "../runs/submit";
import { startControllerHarness, type ControllerHarness } from "../test/controller";

/**
 * A queued run claimed during a database blip (docs/rules.md §2.10): the claim's UPDATE commits,
 * then its reply is lost (a failover, a reset connection), so the tick fails before the
 * controller tracks the run. The run names that controller as executor, which heartbeats on,
 * so no other controller takes it over: the controller itself must adopt it.
 */

let h: ControllerHarness;
let scratch: string;
const actor = { id: "test", role: "operator" };

beforeAll(async () => {
  h = await startControllerHarness();
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), "rw-claim-lost-"));
});
afterAll(async () => {
  await h?.close();
  fs.rmSync(scratch, { recursive: true, force: true });
});

/** A database client whose first queued-run claim commits and then fails, as a lost reply does. */
function losingFirstClaimReply(): { wrapDb: (db: Db) => Db; lost: () => number } {
  let lost = 0;
  const wrapDb = (db: Db): Db => {
    // Called as a tag, or with one Prisma.Sql (readRows on a client it has no pool for).
    const $queryRaw = async (query: TemplateStringsArray | Prisma.Sql, ...values: unknown[]) => {
      const sql = query instanceof Prisma.Sql ? query : null;
      const rows: unknown = await (sql ? db.$queryRaw(sql) : db.$queryRaw(query as TemplateStringsArray, ...values));
      const text = sql ? sql.sql : (query as TemplateStringsArray).join("?");
      if (lost === 0 && /^\s*UPDATE runs SET status = 'starting'/.test(text)) {
        lost++;
        throw new Error("Connection terminated unexpectedly (the claim committed; its reply was lost)");
      }
      return rows;
    };
    return new Proxy(db, {
      get(target, prop) {
        if (prop === "$queryRaw") return $queryRaw;
        const value: unknown = Reflect.get(target, prop, target);
        return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
  };
  return { wrapDb, lost: () => lost };
}

/** The run once it ended, or as it stands after `timeoutMs` (so a stuck run fails on its status, not a timeout). */
async function settled(runId: string, timeoutMs: number): Promise<Run> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const run = await h.db.db.run.findUniqueOrThrow({ where: { id: runId } });
    if (run.status === "succeeded" || run.status === "failed" || Date.now() > deadline) return run;
    await new Promise((r) => setTimeout(r, 50));
  }
}

function markerCommand(marker: string, sleepS = 0): string {
  return `${sleepS ? `sleep ${sleepS}; ` : ""}printf '%s\\n' "$RUNWARDEN_TURN" >> '${marker}'`;
}

describe("a claim whose reply was lost", () => {
  it("the controller adopts the run it executes but does not track, and the run succeeds with each turn once", async () => {
    const marker = path.join(scratch, "lost.txt");
    const blip = losingFirstClaimReply();
    const c = await h.controller({ wrapDb: blip.wrapDb });
    const run = await submitRun(
      h.db.db,
      "inst-a",
      { companyId: "co-1", taskId: "claim-lost-1", agent: "a", provider: "codex", sandboxMode: "warm", turns: 3, agentCommand: markerCommand(marker) },
      actor,
    );
    c.start();
    const done = await settled(run.id, 30_000);
    await c.stop("test");

    expect(blip.lost()).toBe(1);
    expect({ status: done.status, turnsDone: done.turnsDone, code: done.failureCode }).toEqual({ status: "succeeded", turnsDone: 3, code: null });
    expect(fs.readFileSync(marker, "utf8").trim().split("\n")).toEqual(["1", "2", "3"]);
    const boot = c.ctx.identity.bootId;
    const events = await h.db.db.runEvent.findMany({ where: { runId: run.id }, orderBy: { id: "asc" } });
    // The lost claim wrote no `claimed` event; the adoption says why the epoch moved (1 → 2).
    expect(events.filter((e) => e.type === "claimed")).toHaveLength(0);
    const adopted = events.filter((e) => e.type === "run_adopted");
    expect(adopted.map((e) => ({ bootId: e.bootId, data: e.data }))).toEqual([
      { bootId: boot, data: { why: "executed by this controller but not tracked", epochWas: 1, epoch: 2, status: "starting", phase: null } },
    ]);
    const started = events.find((e) => e.type === "recovery_started");
    expect(started?.data).toEqual({ restartKind: "hot", executorWas: "untracked", phase: null });
    expect(started!.id > adopted[0]!.id).toBe(true);
    // Recovery routed it with proof, by the same controller: nothing had reached a runner.
    const routes = await h.db.db.proof.findMany({ where: { runId: run.id, kind: "recovery_route" } });
    expect(routes.map((p) => ({ verdict: p.verdict, reason: p.reason, by: p.evaluatedBy }))).toEqual([{ verdict: "restart_acquire", reason: "nothing_reached_a_runner", by: boot }]);
    expect(done.restarts).toBe(1);
    // One sandbox, torn down at the end.
    const leases = await h.db.db.environmentLease.findMany({ where: { runId: run.id } });
    expect(leases.map((l) => [l.status, l.cleanupStatus])).toEqual([["expired", "destroyed"]]);
  }, 60_000);

  it("a run the controller tracks is never adopted, however many ticks pass while it executes", async () => {
    const marker = path.join(scratch, "tracked.txt");
    const c = await h.controller({ pollMs: 20 });
    const run = await submitRun(
      h.db.db,
      "inst-a",
      { companyId: "co-1", taskId: "claim-tracked-1", agent: "a", provider: "codex", sandboxMode: "per_turn", turns: 3, agentCommand: markerCommand(marker, 0.5) },
      actor,
    );
    c.start();
    const done = await settled(run.id, 30_000);
    await c.stop("test");

    expect({ status: done.status, turnsDone: done.turnsDone, restarts: done.restarts }).toEqual({ status: "succeeded", turnsDone: 3, restarts: 0 });
    expect(fs.readFileSync(marker, "utf8").trim().split("\n")).toEqual(["1", "2", "3"]);
    const types = (await h.db.db.runEvent.findMany({ where: { runId: run.id }, orderBy: { id: "asc" } })).map((e) => e.type);
    expect(types.filter((t) => t === "run_adopted" || t === "recovery_started")).toEqual([]);
    expect(types.filter((t) => t === "claimed")).toHaveLength(1);
  }, 60_000);
});
