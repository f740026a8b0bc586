import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Prisma } from "../db/client";
import { submitRun } from "../runs/submit";
import type { SandboxProvider } from "../providers/types";
import { acquireSandbox, resumeLease } from "./acquire";
import { isRunLost } from "./fence";
import { sweepCreationIntents } from "./sweeps";
import { spawnController, type ControllerProcessHandle } from "../test/controller-process";
import { startControllerHarness, waitFor, type ControllerHarness } from "../test/controller";

/**
 * The executor epoch (docs/rules.md §2.10) with two real controller
 * processes: one is SIGSTOPped past the silence window (as a stalled controller on another
 * host, which no process-exit proof can judge), the other takes its run over; when the
 * first wakes, its writes to that run change nothing and it stops working on it.
 */

let h: ControllerHarness;
const procs: ControllerProcessHandle[] = [];
let scratch: string;

beforeAll(async () => {
  h = await startControllerHarness();
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), "rw-fence-"));
});

async function killControllers(): Promise<void> {
  for (const p of procs.splice(0)) {
    p.kill("SIGCONT");
    p.kill("SIGKILL");
    await p.exited;
  }
}

afterAll(async () => {
  await killControllers();
  await h?.close();
  fs.rmSync(scratch, { recursive: true, force: true });
});

function controller(): ControllerProcessHandle {
  const p = spawnController({
    DATABASE_URL: h.db.url,
    EMULATOR_URL: h.emu.emulator.url,
    RUNWARDEN_INSTANCE_ID: "inst-a",
    RUNWARDEN_CONTROLLER_HOME: fs.mkdtempSync(path.join(scratch, "home-")),
    RUNWARDEN_EXECUTOR_TIMEOUT_MS: "3000",
    RUNWARDEN_SWEEP_INTERVAL_MS: "60000",
  });
  procs.push(p);
  return p;
}

const bootIdOf = (p: ControllerProcessHandle) => /bootId=(\S+)/.exec(p.output.find((l) => l.startsWith("controller ready:")) ?? "")?.[1] ?? "";

describe("a stalled controller wakes after a takeover (§2.10)", () => {
  it("its writes change nothing, it stops working on the run, and the run finishes once under the new executor", async () => {
    const marker = path.join(scratch, "marker.txt");
    const a = controller();
    await a.ready;
    const aBoot = bootIdOf(a);
    const run = await submitRun(
      h.db.db,
      "inst-a",
      { companyId: "co-1", taskId: "fence-1", agent: "a", provider: "codex", sandboxMode: "warm", turns: 5, agentCommand: `sleep 1; printf '%s\\n' "$RUNWARDEN_TURN" >> '${marker}'` },
      { id: "test", role: "operator" },
    );
    await waitFor("A to finish a turn", async () => {
      const r = await h.db.db.run.findUniqueOrThrow({ where: { id: run.id } });
      return r.executorBootId === aBoot && r.turnsDone >= 1 ? r : null;
    }, 60_000);
    // A is on "another host": its pid cannot be probed here, so only its silence counts.
    await h.db.db.controllerProcess.update({ where: { bootId: aBoot }, data: { pidSpace: "ps-another-host" } });
    a.kill("SIGSTOP");
    const stoppedAt = new Date();

    const b = controller();
    await b.ready;
    const bBoot = bootIdOf(b);
    const taken = await waitFor("B to take the run over", async () => {
      const r = await h.db.db.run.findUniqueOrThrow({ where: { id: run.id } });
      return r.executorBootId === bBoot ? r : null;
    }, 60_000);
    await waitFor("B to finish a turn", async () => (await h.db.db.runEvent.count({ where: { runId: run.id, bootId: bBoot, type: "turn_done" } })) > 0 || null, 60_000);
    const takeoverAt = (await h.db.db.runEvent.findFirstOrThrow({ where: { runId: run.id, bootId: bBoot }, orderBy: { id: "asc" } })).at;

    a.kill("SIGCONT");
    const done = await waitFor("the run to settle", async () => {
      const r = await h.db.db.run.findUniqueOrThrow({ where: { id: run.id } });
      return r.status === "succeeded" || r.status === "failed" ? r : null;
    }, 90_000);
    // A woke up mid-turn: give it the time to try its writes (a sleep on purpose: none may land).
    await new Promise((r) => setTimeout(r, 3_000));

    expect({ status: done.status, turnsDone: done.turnsDone, code: done.failureCode }).toEqual({ status: "succeeded", turnsDone: 5, code: null });
    // After the takeover, nothing A did reached the run's record.
    const staleEvents = await h.db.db.runEvent.findMany({ where: { runId: run.id, bootId: aBoot, at: { gt: takeoverAt } } });
    expect(staleEvents.map((e) => e.type)).toEqual([]);
    // Each turn ran once, and B's sandbox was torn down by B's finish only.
    expect(fs.readFileSync(marker, "utf8").trim().split("\n")).toEqual(["1", "2", "3", "4", "5"]);
    expect(stoppedAt.getTime()).toBeLessThan(takeoverAt.getTime());
    // A is still up (it stopped working on the run, either at its fenced write — "run lost to
    // another controller" — or at an in-flight call that failed while it was stopped), and
    // stored no proof about the run either.
    expect(a.child.exitCode).toBeNull();
    expect(await h.db.db.proof.count({ where: { runId: run.id, evaluatedBy: aBoot, evaluatedAt: { gt: takeoverAt } } })).toBe(0);
    // Claimed by A (queued → A), then taken over by B: the fencing token moved twice.
    expect(taken.executorEpoch).toBeGreaterThanOrEqual(2);
  }, 240_000);
});

describe("a stale executor writes no intent and no lease (§2.10)", () => {
  const actor = { id: "test", role: "operator" } as const;
  async function claimedRun(taskId: string) {
    const run = await submitRun(h.db.db, "inst-a", { companyId: "co-1", taskId, agent: "a", provider: "codex", sandboxMode: "warm", turns: 1 }, actor);
    // Claimed at epoch 1, as a queued claim does; the run stays queued so no controller here takes it.
    return h.db.db.run.update({ where: { id: run.id }, data: { executorEpoch: 1 } });
  }
  // No controller may claim these queued runs: the acquires below are the only actors.
  beforeAll(killControllers);
  const takeOver = (runId: string) => h.db.db.run.update({ where: { id: runId }, data: { executorEpoch: { increment: 1 } } });
  const rejection = (p: Promise<unknown>) => p.then(() => "resolved", (err: unknown) => (isRunLost(err) ? "RunLost" : String(err)));

  it("taken over before it asks the provider: no intent, no sandbox, no lease", async () => {
    const run = await claimedRun("fence-acquire-1");
    await takeOver(run.id);
    const ctx = h.service();
    expect(await rejection(acquireSandbox(ctx, run, null))).toBe("RunLost");
    expect(await h.db.db.sandboxCreationIntent.count({ where: { runId: run.id } })).toBe(0);
    expect(await h.db.db.environmentLease.count({ where: { runId: run.id } })).toBe(0);
    expect(await ctx.provider.listByLabels({ "runwarden.instance": "inst-a", "runwarden.run": run.id })).toEqual([]);
  });

  it("taken over while the provider creates: no lease, and the sandbox's intent is due for the sweep at once", async () => {
    const run = await claimedRun("fence-acquire-2");
    const ctx = h.service();
    const real = ctx.provider;
    const provider: SandboxProvider = Object.assign(Object.create(real) as SandboxProvider, {
      create: async (...args: Parameters<SandboxProvider["create"]>) => {
        const sandbox = await real.create(...args);
        await takeOver(run.id);
        return sandbox;
      },
    });
    const before = Date.now();
    expect(await rejection(acquireSandbox({ ...ctx, provider }, run, null))).toBe("RunLost");
    expect(await h.db.db.environmentLease.count({ where: { runId: run.id } })).toBe(0);
    const intent = await h.db.db.sandboxCreationIntent.findFirstOrThrow({ where: { runId: run.id } });
    expect(intent.status).toBe("pending");
    expect(intent.nextAttemptAt.getTime()).toBeGreaterThanOrEqual(before);
    expect(intent.nextAttemptAt.getTime()).toBeLessThanOrEqual(Date.now());
    expect((await real.getByName(intent.creationName))?.name).toBe(intent.creationName);
  });

  it("a lease commit that fails with a plain error: the intent is due at once, and the next sweep reclaims the sandbox", async () => {
    const run = await claimedRun("fence-acquire-3");
    const ctx = h.service();
    const real = ctx.db;
    // The lease's create fails once inside the commit, as a database error (a lost
    // connection, a constraint) would, after the provider created the sandbox.
    let failed = 0;
    type Tx = Prisma.TransactionClient;
    const failingLeaseCreate = (tx: Tx): Tx =>
      new Proxy(tx, {
        get(target, key) {
          if (key === "environmentLease" && failed === 0) {
            return { create: () => ((failed += 1), Promise.reject(new Error("connection terminated unexpectedly"))) };
          }
          return target[key as keyof Tx];
        },
      });
    // defineProperty, not assignment: the client's own proxy would take an assigned property.
    const db = Object.create(real, {
      $transaction: { value: (fn: (tx: Tx) => Promise<unknown>) => real.$transaction((tx) => fn(failingLeaseCreate(tx))) },
    }) as typeof real;
    const before = Date.now();
    expect(await rejection(acquireSandbox({ ...ctx, db }, run, null))).toBe("Error: connection terminated unexpectedly");
    expect(failed).toBe(1);
    expect(await h.db.db.environmentLease.count({ where: { runId: run.id } })).toBe(0);
    const intent = await h.db.db.sandboxCreationIntent.findFirstOrThrow({ where: { runId: run.id } });
    expect(intent.status).toBe("pending");
    expect(intent.nextAttemptAt.getTime()).toBeGreaterThanOrEqual(before);
    expect(intent.nextAttemptAt.getTime()).toBeLessThanOrEqual(Date.now());
    expect((await ctx.provider.getByName(intent.creationName))?.name).toBe(intent.creationName);

    // The creator (this very process) is alive: only the due time lets the sweep act now.
    await sweepCreationIntents(ctx, "test");
    expect((await h.db.db.sandboxCreationIntent.findUniqueOrThrow({ where: { id: intent.id } })).status).toBe("reclaimed");
    expect(await ctx.provider.getByName(intent.creationName)).toBeNull();
    const leases = await h.db.db.environmentLease.findMany({ where: { intentId: intent.id } });
    expect(leases.map((l) => l.status)).toEqual(["expired"]);
  });

  it("taken over before it resumes a warm lease: the lease stays as it was", async () => {
    const run = await claimedRun("fence-resume-1");
    const ctx = h.service();
    const lease = await acquireSandbox(ctx, run, null);
    await takeOver(run.id);
    expect(await rejection(resumeLease(ctx, run, lease))).toBe("RunLost");
    const leases = await h.db.db.environmentLease.findMany({ where: { runId: run.id } });
    expect(leases.map((l) => ({ id: l.id, status: l.status, outcome: l.acquisitionOutcome }))).toEqual([{ id: lease.id, status: "active", outcome: "created" }]);
  });
});
