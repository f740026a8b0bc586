import crypto from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import http from "node:http";
import net from "node:net";
import pg from "pg";
import pino from "pino";
import { currentProcessIdentity } from "../process/identity";
import { DaytonaProvider } from "../providers/daytona";
import { buildLabels } from "../providers/labels";
import { ProviderError } from "../providers/errors";
import { createRunnerClient } from "../providers/runner";
import { retryRun } from "../runs/retry";
import type { ControllerConfig } from "./config";
import { Controller } from "./controller";
import { claimInterruptedRuns, recoverRun } from "./recovery";
import { startControllerHarness, waitFor, type ControllerHarness } from "../test/controller";

/** Restart recovery against PostgreSQL and the emulator: paging (§2.8) and what a refused run rests in (§2.1). */

let h: ControllerHarness;
beforeAll(async () => {
  h = await startControllerHarness();
});
afterAll(() => h.close());

/** A controller of inst-a that drained (stopped on purpose): recovery takes its runs up at once. */
async function drainedExecutor(db: ControllerHarness["db"]["db"], prefix: string): Promise<string> {
  const me = currentProcessIdentity();
  await db.instance.upsert({ where: { id: "inst-a" }, create: { id: "inst-a", name: "a" }, update: {} });
  const bootId = `${prefix}-${crypto.randomUUID()}`;
  await db.controllerProcess.create({
    data: { bootId, instanceId: "inst-a", pid: me.pid, startedAt: new Date(me.startedAt), hostname: me.hostname, pidSpace: me.pidSpace, stoppedAt: new Date(), stopReason: "drain" },
  });
  return bootId;
}

const uuid = (prefix: string, n: number) => `${prefix}${String(n).padStart(4, "0")}-0000-4000-8000-000000000000`;

describe("run recovery paging", () => {
  it("finds the one interrupted run behind 250 active runs of a live executor", async () => {
    const { db } = h.db;
    const me = currentProcessIdentity();
    await db.instance.upsert({ where: { id: "inst-a" }, create: { id: "inst-a", name: "a" }, update: {} });
    const process = (bootId: string, stopped: boolean) => ({
      bootId,
      instanceId: "inst-a",
      pid: me.pid,
      startedAt: new Date(me.startedAt),
      startTicks: me.startTicks === null ? null : BigInt(me.startTicks),
      hostname: me.hostname,
      pidSpace: me.pidSpace,
      stoppedAt: stopped ? new Date() : null,
      stopReason: stopped ? "drain" : null,
    });
    // A live executor: this very process under another boot id (alive, same_process).
    const live = `live-${crypto.randomUUID()}`;
    const drained = `drained-${crypto.randomUUID()}`;
    await db.controllerProcess.createMany({ data: [process(live, false), process(drained, true)] });
    const base = { instanceId: "inst-a", companyId: "co-1", agent: "a", provider: "codex", target: "remote" as const, sandboxMode: "warm" as const, status: "running" as const };
    // Ids sort the healthy runs first: the interrupted one is past any single page of 200.
    await db.run.createMany({ data: Array.from({ length: 250 }, (_, i) => ({ ...base, id: uuid("0000", i), taskId: `healthy-${i}`, executorBootId: live })) });
    const interrupted = await db.run.create({ data: { ...base, id: "ffffffff-0000-4000-8000-000000000000", taskId: "interrupted", executorBootId: drained } });

    const service = h.service();
    const claimed = await claimInterruptedRuns(service, 4);
    expect(claimed.map((c) => c.run.id)).toEqual([interrupted.id]);
    expect(claimed[0]!.status).toMatchObject({ gone: true, restartKind: "graceful" });
    // The live executor keeps every one of its runs.
    expect(await db.run.count({ where: { executorBootId: live } })).toBe(250);
  }, 60_000);
});

describe("a takeover works from the run its claim left", () => {
  it("the old executor's checkpoint that lands between the taker's read and its claim is the one recovery sees", async () => {
    const { db } = h.db;
    const gone = await drainedExecutor(db, "gone");
    const run = await db.run.create({
      data: { instanceId: "inst-a", companyId: "co-1", taskId: `late-checkpoint-${crypto.randomUUID()}`, agent: "a", provider: "codex", target: "remote", sandboxMode: "warm", status: "starting", phase: "bootstrapping", executorBootId: gone, runnerInstanceId: "ri-late", sessionId: "s-late" },
    });
    const checkpoint = { turn: 0, sessionId: "s-late", leaseId: "l-late", providerLeaseId: "sb-late", remoteCwd: "/home/sandbox/work", at: new Date().toISOString() };
    // The old executor's write after runner.start commits at the very step between the taker's
    // page read and its compare-and-set on the epoch (which that write does not move).
    const service = h.service();
    const runs = db.run;
    const interleaved = new Proxy(runs, {
      get(target, key, receiver) {
        const value = Reflect.get(target, key, receiver) as unknown;
        if ((key === "updateMany" || key === "updateManyAndReturn") && typeof value === "function") {
          return async (args: unknown) => {
            await db.$executeRaw`UPDATE runs SET checkpoint = ${JSON.stringify(checkpoint)}::jsonb WHERE id = ${run.id}::uuid`;
            return (value as (a: unknown) => Promise<unknown>).call(target, args);
          };
        }
        return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
    const taker = {
      ...service,
      db: new Proxy(db, {
        get(target, key, receiver) {
          if (key === "run") return interleaved;
          const value = Reflect.get(target, key, receiver) as unknown;
          // A claim made in a transaction of its own: the write lands just before it begins.
          if (key === "$transaction" && typeof value === "function") {
            return async (...args: unknown[]) => {
              await db.$executeRaw`UPDATE runs SET checkpoint = ${JSON.stringify(checkpoint)}::jsonb WHERE id = ${run.id}::uuid`;
              return (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
            };
          }
          return value;
        },
      }),
    };
    const claimed = (await claimInterruptedRuns(taker, 1000)).filter((c) => c.run.id === run.id);
    expect(claimed).toHaveLength(1);
    expect(claimed[0]!.run.executorEpoch).toBe(run.executorEpoch + 1);
    expect(claimed[0]!.run.checkpoint).toEqual(checkpoint);
  }, 60_000);
});

describe("a takeover is not held up by a run row another transaction holds", () => {
  it("claims the other interrupted runs at once and the held one once its holder is gone", async () => {
    const { db } = h.db;
    const gone = await drainedExecutor(db, "gone");
    const base = { instanceId: "inst-a", companyId: "co-1", agent: "a", provider: "codex", target: "remote" as const, sandboxMode: "warm" as const, status: "running" as const, phase: "session_open" as const, executorBootId: gone };
    // Ids sort the held run first: the claim meets it before the others.
    const ids = ["11111111", "22222222", "33333333"].map((p) => `${p}-0000-4000-8000-${crypto.randomBytes(6).toString("hex")}`);
    await db.run.createMany({ data: ids.map((id, i) => ({ ...base, id, taskId: `held-${i}-${id}` })) });
    // A stalled controller's open transaction that wrote the first run.
    const holder = new pg.Client({ connectionString: h.db.url });
    holder.on("error", () => {});
    await holder.connect();
    try {
      await holder.query("BEGIN");
      await holder.query("UPDATE runs SET heartbeat_at = now() WHERE id = $1", [ids[0]]);
      const claim = claimInterruptedRuns(h.service(), 1000).then((c) => c.map((x) => x.run.id).filter((id) => ids.includes(id)));
      const first = await Promise.race([claim, new Promise<"still waiting">((r) => setTimeout(() => r("still waiting"), 5_000))]);
      expect(first).toEqual(ids.slice(1));
      await holder.query("COMMIT");
    } finally {
      await holder.end().catch(() => {});
    }
    expect((await claimInterruptedRuns(h.service(), 1000)).map((c) => c.run.id).filter((id) => ids.includes(id))).toEqual([ids[0]]);
  }, 60_000);
});

describe("lease-binding refusal (§2.1)", () => {
  it("rests the run in the verdict's continuation code with Retry; the refusal code stays on the proof", async () => {
    const { db } = h.db;
    await db.instance.upsert({ where: { id: "inst-a" }, create: { id: "inst-a", name: "a" }, update: {} });
    const run = await db.run.create({
      data: { instanceId: "inst-a", companyId: "co-1", taskId: `refused-${crypto.randomUUID()}`, agent: "a", provider: "codex", target: "remote", sandboxMode: "per_turn", status: "running", phase: "session_open", turnsDone: 1, runnerInstanceId: "ri-1", sessionId: "s-1" },
    });
    const sandbox = await h.emu.admin.plant({ name: `rw-refused-${run.id}`, labels: buildLabels({ instanceId: "inst-a", companyId: "co-1", runId: run.id }) });
    // A replacement lease can never carry a reattach (§2.1 check 4).
    const lease = await db.environmentLease.create({
      data: { runId: run.id, instanceId: "inst-a", companyId: "co-1", provider: "emulator", providerLeaseId: sandbox.id, sandboxName: sandbox.name, remoteCwd: "/home/sandbox/work", acquisitionOutcome: "replacement", status: "active" },
    });
    await db.run.update({ where: { id: run.id }, data: { checkpoint: { providerLeaseId: sandbox.id, remoteCwd: "/home/sandbox/work", leaseId: lease.id } } });

    const service = h.service();
    const fresh = await db.run.findUniqueOrThrow({ where: { id: run.id } });
    expect(await recoverRun(service, fresh, { gone: true, restartKind: "hard", reason: "test" })).toBe(false);

    const after = await db.run.findUniqueOrThrow({ where: { id: run.id } });
    const proof = await db.proof.findFirstOrThrow({ where: { runId: run.id, kind: "lease_binding" }, orderBy: { evaluatedAt: "desc" } });
    expect(proof.verdict).toBe("refused");
    expect(proof.code).toBe("native_runner_staged_attachment_recovery_unproven");
    const continuation = (proof.output as { continuation: { code: string; canRetry: boolean; owner: string } }).continuation;
    expect(after).toMatchObject({ status: "failed", failureCode: continuation.code, canRetry: continuation.canRetry, owner: continuation.owner, recoveryState: "blocked" });
    expect(after.failureCode).toBe("native_continuation_requires_reconciliation");
  }, 60_000);
});

describe("the claim comes from the checkpoint alone (§2.1)", () => {
  it("a checkpoint without the lease id and remote directory makes a claim that names nothing, and the binding is refused", async () => {
    const { db } = h.db;
    await db.instance.upsert({ where: { id: "inst-a" }, create: { id: "inst-a", name: "a" }, update: {} });
    const run = await db.run.create({
      data: { instanceId: "inst-a", companyId: "co-1", taskId: `no-checkpoint-${crypto.randomUUID()}`, agent: "a", provider: "codex", target: "remote", sandboxMode: "warm", status: "running", phase: "session_open", turnsDone: 1, runnerInstanceId: "ri-1", sessionId: "s-1", checkpoint: { turn: 1, sessionId: "s-1" } },
    });
    const sandbox = await h.emu.admin.plant({ name: `rw-nockpt-${run.id}`, labels: buildLabels({ instanceId: "inst-a", companyId: "co-1", runId: run.id }) });
    await db.environmentLease.create({
      data: { runId: run.id, instanceId: "inst-a", companyId: "co-1", provider: "emulator", providerLeaseId: sandbox.id, sandboxName: sandbox.name, remoteCwd: "/home/sandbox/work", acquisitionOutcome: "created", status: "active" },
    });
    const fresh = await db.run.findUniqueOrThrow({ where: { id: run.id } });
    expect(await recoverRun(h.service(), fresh, { gone: true, restartKind: "hard", reason: "test" })).toBe(false);

    const claim = await db.recoveryClaim.findFirstOrThrow({ where: { runId: run.id } });
    expect(claim).toMatchObject({ providerLeaseId: null, remoteCwd: null, disposition: "refused" });
    const proof = await db.proof.findFirstOrThrow({ where: { runId: run.id, kind: "lease_binding" } });
    expect(proof).toMatchObject({ verdict: "refused", code: "native_remote_recovery_lease_mismatch", reason: "provider_lease_mismatch" });
    expect(await db.run.findUniqueOrThrow({ where: { id: run.id } })).toMatchObject({ status: "failed", failureCode: "native_continuation_requires_reconciliation" });
  }, 60_000);
});

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** A run interrupted mid-session on a sandbox `sandboxId`, whose executor drained: recovery takes it up at once. */
async function interruptedRun(db: ControllerHarness["db"]["db"], sandboxId: string) {
  const drained = await drainedExecutor(db, "drained");
  const run = await db.run.create({
    data: {
      instanceId: "inst-a",
      companyId: "co-1",
      taskId: `${sandboxId}-${crypto.randomUUID()}`,
      agent: "a",
      provider: "codex",
      target: "remote",
      sandboxMode: "warm",
      status: "running",
      phase: "session_open",
      turnsDone: 1,
      runnerInstanceId: "ri-1",
      sessionId: "s-1",
      executorBootId: drained,
      checkpoint: { turn: 1, sessionId: "s-1", providerLeaseId: sandboxId, remoteCwd: "/home/sandbox/work" },
    },
  });
  await db.environmentLease.create({
    data: { runId: run.id, instanceId: "inst-a", companyId: "co-1", provider: "emulator", providerLeaseId: sandboxId, sandboxName: `rw-${sandboxId}-${run.id}`, remoteCwd: "/home/sandbox/work", acquisitionOutcome: "created", status: "active" },
  });
  return run;
}

/** A controller in this process whose provider is at `apiUrl`. */
function controllerAt(apiUrl: string, config: Partial<ControllerConfig>) {
  const provider = new DaytonaProvider({ apiUrl, apiKey: "k", timeoutMs: 500, instanceId: "inst-a" });
  return new Controller({
    db: h.db.db,
    provider,
    providerTarget: "emulator",
    runner: createRunnerClient({ apiKey: "k", timeoutMs: 500, toolboxUrl: (id, o) => provider.toolboxUrl(id, o) }),
    identity: { ...currentProcessIdentity(), bootId: crypto.randomUUID() },
    config: { ...h.service().config, pollMs: 30, recoveryBackoffMs: 0, breakerProbeMs: 50, breakerProbeCapMs: 100, ...config },
    log: pino({ level: "silent" }),
  });
}

describe("recovery never loops (§2.8)", () => {
  it("counts each failed recovery attempt, ends the run with native_recovery_attempts_exhausted and Retry after the bound: exactly N attempts", async () => {
    const { db } = h.db;
    const run = await interruptedRun(db, "sbx-garbage");
    // A provider that answers, but never with what the API promises (an HTML page with a 200):
    // the run's own trouble, not an outage, so every recovery attempt that meets it counts.
    const server = http.createServer((_req, res) => res.writeHead(200, { "content-type": "text/html" }).end("<html>maintenance</html>"));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const controller = controllerAt(`http://127.0.0.1:${(server.address() as net.AddressInfo).port}`, { recoveryMaxAttempts: 3 });
    await controller.boot();
    controller.start();
    try {
      const failed = await waitFor("the run to end", async () => {
        const r = await db.run.findUniqueOrThrow({ where: { id: run.id } });
        return r.status === "failed" ? r : null;
      }, 30_000);
      // Give a looping controller the time to claim it again (it must not).
      await new Promise((r) => setTimeout(r, 500));
      await controller.idle();
      expect(failed).toMatchObject({ failureCode: "native_recovery_attempts_exhausted", outcome: "terminal_failure", owner: "board", canRetry: true, recoveryAttempts: 3 });
      const after = await db.run.findUniqueOrThrow({ where: { id: run.id } });
      expect(after.restarts).toBe(3);
      // Never more claims than attempts (none here: the sandbox is looked up before a claim is made).
      expect(await db.recoveryClaim.count({ where: { runId: run.id } })).toBeLessThanOrEqual(3);
      const attempts = await db.proof.findMany({ where: { runId: run.id, kind: "recovery_attempt" }, orderBy: { evaluatedAt: "asc" } });
      expect(attempts.map((p) => p.verdict)).toEqual(["try_again", "try_again", "give_up"]);
      expect(attempts.at(-1)).toMatchObject({ code: "native_recovery_attempts_exhausted" });
      expect((attempts.at(-1)!.evidence as { errors: string[] }).errors).toHaveLength(2);
      // Each proof says why it counted: the error was an answer, not the provider's absence.
      expect(attempts.map((p) => (p.checks as Array<{ name: string; ok: boolean }>)[0])).toEqual(
        attempts.map(() => expect.objectContaining({ name: "error_is_provider_unavailability", ok: false })),
      );
      expect(await db.runEvent.count({ where: { runId: run.id, type: "recovery_attempt_failed" } })).toBe(3);
      const retried = await retryRun(db, run.id, { id: "test", role: "board" });
      expect(retried).toMatchObject({ created: true });
      expect(retried.run.previousRunId).toBe(run.id);
    } finally {
      await controller.stop("test_end");
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  }, 60_000);

  it("a provider that cannot be reached at all is an outage: the run waits, no attempt counted, however long it lasts", async () => {
    const { db } = h.db;
    const run = await interruptedRun(db, "sbx-unreachable");
    const controller = controllerAt(`http://127.0.0.1:${await closedPort()}`, { recoveryMaxAttempts: 2 });
    await controller.boot();
    controller.start();
    try {
      await waitFor("a recovery attempt judged", async () => (await db.proof.count({ where: { runId: run.id, kind: "recovery_attempt" } })) > 0, 30_000);
      // Many times the whole budget of 2 attempts with no back-off: before §2.8's outage rule it ended within it.
      await new Promise((r) => setTimeout(r, 3_000));
      expect(controller.ctx.breaker?.open).toBe(true);
      const now = await db.run.findUniqueOrThrow({ where: { id: run.id } });
      expect(now).toMatchObject({ status: "running", failureCode: null, recoveryAttempts: 0 });
      expect(now.providerWaitSince).not.toBeNull();
      const attempts = await db.proof.findMany({ where: { runId: run.id, kind: "recovery_attempt" } });
      expect(new Set(attempts.map((p) => p.verdict))).toEqual(new Set(["wait"]));
      // While the breaker is open the controller claims nothing: one wait, not one per poll.
      expect(attempts.length).toBe(1);
      expect(await db.controllerProcess.findUniqueOrThrow({ where: { bootId: controller.ctx.identity.bootId } })).toMatchObject({ providerLastError: expect.stringContaining("ECONNREFUSED") });
    } finally {
      await controller.stop("test_end");
    }
  }, 60_000);

  it("does not claim a run whose back-off has not passed", async () => {
    const { db } = h.db;
    await db.instance.upsert({ where: { id: "inst-a" }, create: { id: "inst-a", name: "a" }, update: {} });
    const run = await db.run.create({
      data: {
        instanceId: "inst-a",
        companyId: "co-1",
        taskId: `backoff-${crypto.randomUUID()}`,
        agent: "a",
        provider: "codex",
        target: "remote",
        sandboxMode: "warm",
        status: "running",
        phase: "session_open",
        recoveryAttempts: 1,
        recoveryNotBefore: new Date(Date.now() + 60_000),
      },
    });
    const claimed = await claimInterruptedRuns(h.service(), 1000);
    expect(claimed.map((c) => c.run.id)).not.toContain(run.id);
    await db.run.update({ where: { id: run.id }, data: { recoveryNotBefore: new Date(Date.now() - 1) } });
    expect((await claimInterruptedRuns(h.service(), 1000)).map((c) => c.run.id)).toContain(run.id);
  }, 60_000);
});

describe("a warm sandbox that never starts again", () => {
  it("each recovery's resumed lease shares the sandbox's start budget: the run ends with sandbox_not_restartable, not after every recovery attempt", async () => {
    const { db } = h.db;
    const drained = await drainedExecutor(db, "drained");
    const run = await db.run.create({
      data: {
        instanceId: "inst-a",
        companyId: "co-1",
        taskId: `never-starts-${crypto.randomUUID()}`,
        agent: "a",
        provider: "codex",
        target: "remote",
        sandboxMode: "warm",
        status: "suspended",
        phase: "session_open",
        turnsDone: 1,
        turnsPlanned: 3,
        runnerInstanceId: "ri-1",
        sessionId: "s-1",
        executorBootId: drained,
      },
    });
    const sandbox = await h.emu.admin.plant({ name: `rw-never-starts-${run.id}`, labels: buildLabels({ instanceId: "inst-a", companyId: "co-1", runId: run.id }) });
    const lease = await db.environmentLease.create({
      data: { runId: run.id, instanceId: "inst-a", companyId: "co-1", provider: "emulator", providerLeaseId: sandbox.id, sandboxName: sandbox.name, remoteCwd: "/home/sandbox/work", acquisitionOutcome: "created", status: "active" },
    });
    await db.run.update({ where: { id: run.id }, data: { checkpoint: { turn: 1, sessionId: "s-1", leaseId: lease.id, providerLeaseId: sandbox.id, remoteCwd: "/home/sandbox/work" } } });
    // Auto-stopped while no controller ran it; and every start the provider is asked for fails.
    const real = h.emu.provider({ instanceId: "inst-a" });
    await real.stop(sandbox.id);
    let starts = 0;
    const provider = Object.create(real, {
      // Daytona answers a start that errors with 400 "Sandbox failed to start" (sandbox.controller.ts, waitForSandboxStarted).
      start: { value: () => ((starts += 1), Promise.reject(new ProviderError("http", `POST /sandbox/${sandbox.id}/start`, "Sandbox failed to start", { status: 400 }))) },
    }) as typeof real;

    const base = h.service().config;
    const controller = new Controller({
      db,
      provider,
      providerTarget: "emulator",
      runner: h.emu.runner(real),
      identity: { ...currentProcessIdentity(), bootId: crypto.randomUUID() },
      // Recovery attempts to spare: only the sandbox's own start budget may end the run.
      config: { ...base, pollMs: 30, recoveryMaxAttempts: 6, recoveryBackoffMs: 0 },
      log: pino({ level: "silent" }),
    });
    await controller.boot();
    controller.start();
    try {
      const failed = await waitFor("the run to end", async () => {
        const r = await db.run.findUniqueOrThrow({ where: { id: run.id } });
        return r.status === "failed" ? r : null;
      }, 30_000);
      await controller.idle();
      expect(failed).toMatchObject({ failureCode: "sandbox_not_restartable", canRetry: true, recoveryAttempts: 1 });
      // Two recoveries, each on a lease of its own, and one start each: the budget of 2, spent.
      expect(starts).toBe(2);
      expect(await db.runEvent.count({ where: { runId: run.id, type: "sandbox_start_attempted" } })).toBe(2);
      const resumed = await db.environmentLease.count({ where: { runId: run.id, providerLeaseId: sandbox.id, acquisitionOutcome: "resumed" } });
      expect(resumed).toBe(2);
      const proofs = await db.proof.findMany({ where: { runId: run.id, kind: "stopped_sandbox" }, orderBy: { evaluatedAt: "asc" } });
      // Each recovery stores its decision to start before the start, then the verdict on what the provider shows after it (docs/rules.md, "The recovery route").
      expect(proofs.map((p) => [p.verdict, (p.evidence as { startAttempts: number }).startAttempts])).toEqual([
        ["start_sandbox", 0],
        ["start_sandbox", 1],
        ["start_sandbox", 1],
        ["end_run", 2],
      ]);
      expect(proofs.at(-1)).toMatchObject({ code: "sandbox_not_restartable", reason: "start_attempts_exhausted" });
    } finally {
      await controller.stop("test_end");
    }
  }, 60_000);
});
