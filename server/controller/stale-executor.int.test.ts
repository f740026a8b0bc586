import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunnerClient } from "../providers/runner";
import { submitRun } from "../runs/submit";
import { startControllerHarness, waitFor, type ControllerHarness } from "../test/controller";
import type { Controller } from "./controller";

/**
 * A controller that lost its run wakes up at the worst step (docs/rules.md §2.10): another
 * controller took the run over while it stalled, and is working on it. Whatever the stale one
 * does next — record a failure, stop a runner, give a sandbox back, requeue — must touch
 * nothing of the new executor's. The stall is an exact step of a runner wrapper; the takeover
 * is a real second controller, which finds the first one's process record stopped.
 */

let h: ControllerHarness;
let scratch: string;
const actor = { id: "test", role: "operator" };

beforeAll(async () => {
  h = await startControllerHarness();
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), "rw-stale-"));
});
afterAll(async () => {
  await h?.close();
  fs.rmSync(scratch, { recursive: true, force: true });
});

interface Deferred {
  promise: Promise<void>;
  resolve(): void;
}
function deferred(): Deferred {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/** What the new executor's runner did: the sandboxes it ran a turn on. */
function recordingTurns(onTurn: (sandboxId: string) => void) {
  return (runner: RunnerClient): RunnerClient =>
    Object.assign(Object.create(runner) as RunnerClient, {
      turn: async (...args: Parameters<RunnerClient["turn"]>) => {
        onTurn(args[0]);
        return runner.turn(...args);
      },
    });
}

/** B takes the run over from A: A's process record says it stopped (as a crash a supervisor saw), B claims at the next epoch. */
async function takeOverWith(a: Controller, onTurn: (sandboxId: string) => void): Promise<Controller> {
  await h.db.db.controllerProcess.update({ where: { bootId: a.ctx.identity.bootId }, data: { stoppedAt: new Date(), stopReason: "crash" } });
  const b = await h.controller({ wrapRunner: recordingTurns(onTurn) });
  b.start();
  return b;
}

async function settled(runId: string) {
  return waitFor(
    `run ${runId} to settle`,
    async () => {
      const r = await h.db.db.run.findUniqueOrThrow({ where: { id: runId } });
      return r.status === "succeeded" || r.status === "failed" ? r : null;
    },
    60_000,
  );
}

function markerCommand(marker: string): string {
  return `printf '%s\\n' "$RUNWARDEN_TURN" >> '${marker}'`;
}

describe("a stale executor wakes after a takeover", () => {
  it("item 1: its session.open fails after the takeover — it records no startup failure, stops no runner, tears nothing down, requeues nothing", async () => {
    const marker = path.join(scratch, "item1.txt");
    const bTurns = new Set<string>();
    const aStopped: string[] = [];
    const bWorking = deferred();
    let taken: Controller | null = null;
    let stale = false;
    const wrapA = (runner: RunnerClient): RunnerClient =>
      Object.assign(Object.create(runner) as RunnerClient, {
        // A stalls inside session.open; while it is stalled, B takes the run over and works on it.
        sessionOpen: async (sandboxId: string) => {
          stale = true;
          taken = await takeOverWith(a, (sbx) => {
            bTurns.add(sbx);
            bWorking.resolve();
          });
          await bWorking.promise;
          return { ok: false as const, definite: false as const, reason: "timeout" as const, message: `session.open on ${sandboxId} timed out` };
        },
        stop: async (...args: Parameters<RunnerClient["stop"]>) => {
          if (stale) aStopped.push(args[0]);
          return runner.stop(...args);
        },
      });
    const a = await h.controller({ wrapRunner: wrapA });
    const run = await submitRun(h.db.db, "inst-a", { companyId: "co-1", taskId: "stale-1", agent: "a", provider: "codex", sandboxMode: "warm", turns: 3, agentCommand: markerCommand(marker) }, actor);
    a.start();
    const done = await settled(run.id);
    await a.idle();
    await a.stop("test");
    const b = taken as Controller | null;
    await b?.stop("test");
    const aBoot = a.ctx.identity.bootId;
    const takeoverAt = (await h.db.db.runEvent.findFirstOrThrow({ where: { runId: run.id, bootId: b?.ctx.identity.bootId ?? "none" }, orderBy: { id: "asc" } })).at;

    expect({ status: done.status, turnsDone: done.turnsDone, code: done.failureCode, providerAttempts: done.providerAttempts }).toEqual({
      status: "succeeded",
      turnsDone: 3,
      code: null,
      providerAttempts: 0,
    });
    expect(fs.readFileSync(marker, "utf8").trim().split("\n")).toEqual(["1", "2", "3"]);
    // Nothing A did after the takeover reached the run: no proof, no event, no runner stopped.
    expect(await h.db.db.proof.findMany({ where: { runId: run.id, evaluatedBy: aBoot, evaluatedAt: { gte: takeoverAt } }, select: { kind: true } })).toEqual([]);
    expect((await h.db.db.runEvent.findMany({ where: { runId: run.id, bootId: aBoot, at: { gte: takeoverAt } } })).map((e) => e.type)).toEqual([]);
    expect(aStopped.filter((s) => bTurns.has(s))).toEqual([]);
    // Every lease of the run was torn down by the executor that held it last: B.
    const leases = await h.db.db.environmentLease.findMany({ where: { runId: run.id } });
    for (const l of leases) expect({ lease: l.id, by: (l.terminationReceipt as { by?: string } | null)?.by }).not.toEqual({ lease: l.id, by: aBoot });
  }, 120_000);

  it("item 2: it wakes between recording a per-turn run's turn and giving its sandbox back — it stops and destroys only the sandbox no executor uses any more", async () => {
    const marker = path.join(scratch, "item2.txt");
    const bTurns = new Set<string>();
    const aStoppedAfterTakeover: string[] = [];
    const bWorking = deferred();
    let taken: Controller | null = null;
    const wrapA = (runner: RunnerClient): RunnerClient =>
      Object.assign(Object.create(runner) as RunnerClient, {
        // The first stop A makes is the per-turn give-back after turn 1 was recorded: A stalls
        // there, B takes the run over and starts its next turn, then A goes on.
        stop: async (...args: Parameters<RunnerClient["stop"]>) => {
          if (!taken) {
            taken = await takeOverWith(a, (sbx) => {
              bTurns.add(sbx);
              bWorking.resolve();
            });
            await bWorking.promise;
          }
          aStoppedAfterTakeover.push(args[0]);
          return runner.stop(...args);
        },
      });
    const a = await h.controller({ wrapRunner: wrapA });
    const run = await submitRun(h.db.db, "inst-a", { companyId: "co-1", taskId: "stale-2", agent: "a", provider: "codex", sandboxMode: "per_turn", turns: 3, agentCommand: markerCommand(marker) }, actor);
    a.start();
    const done = await settled(run.id);
    await a.idle();
    await a.stop("test");
    await (taken as Controller | null)?.stop("test");
    const aBoot = a.ctx.identity.bootId;

    expect({ status: done.status, turnsDone: done.turnsDone, code: done.failureCode }).toEqual({ status: "succeeded", turnsDone: 3, code: null });
    expect(fs.readFileSync(marker, "utf8").trim().split("\n")).toEqual(["1", "2", "3"]);
    expect(aStoppedAfterTakeover.length).toBeGreaterThan(0);
    // A stopped no runner B ran a turn on, and destroyed no sandbox B ran a turn on.
    expect(aStoppedAfterTakeover.filter((s) => bTurns.has(s))).toEqual([]);
    const destroyedByA = (await h.db.db.environmentLease.findMany({ where: { runId: run.id } }))
      .filter((l) => (l.terminationReceipt as { by?: string } | null)?.by === aBoot)
      .map((l) => l.providerLeaseId);
    expect(destroyedByA.filter((s) => s !== null && bTurns.has(s))).toEqual([]);
    // B went on to a fresh sandbox for turn 2: the one A gave back was out of service when B looked.
    const routes = await h.db.db.proof.findMany({ where: { runId: run.id, kind: "recovery_route" }, select: { verdict: true } });
    expect(routes.map((r) => r.verdict)).toEqual(["next_turn_sandbox"]);
  }, 120_000);
});
