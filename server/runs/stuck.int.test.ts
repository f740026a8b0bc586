import crypto from "node:crypto";
import http from "node:http";
import net from "node:net";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Controller } from "../controller/controller";
import type { ControllerConfig } from "../controller/config";
import { databaseNow } from "../db/clock";
import { STUCK_REASONS, type StuckLimits } from "../engine";
import { env } from "../env";
import { renderMetrics } from "../metrics";
import { currentProcessIdentity } from "../process/identity";
import { DaytonaProvider } from "../providers/daytona";
import { createRunnerClient } from "../providers/runner";
import { startControllerHarness, waitFor, type ControllerHarness } from "../test/controller";
import { countStuck, listStuck, stuckCountSql, stuckListInput, stuckPageSql, type StuckListOutput } from "./stuck";

/**
 * Stuck runs (docs/rules.md §4) against PostgreSQL, with the waiting and back-off rows written by real
 * controllers (an unreachable provider, a provider answering garbage), a silent executor that
 * is a real controller's row that stopped heartbeating, and the SQL held to the engine's rule.
 */

let h: ControllerHarness;
const controllers: Controller[] = [];
const LIMITS: StuckLimits = { silenceWindowMs: 1_000, maxAgeMs: 3600_000, maxTurnMs: 40 * 60_000 };
const ALL = { all: true } as const;
const ids: Record<string, string> = {};

const base = (instanceId: string, taskId: string) => ({ instanceId, companyId: "co-1", taskId: `${taskId}-${crypto.randomUUID()}`, agent: "a", provider: "codex", target: "remote" as const, sandboxMode: "warm" as const });

/** A controller in this process whose provider is at `apiUrl` (as recovery.int.test.ts builds one). */
function controllerAt(apiUrl: string, config: Partial<ControllerConfig>): Controller {
  const provider = new DaytonaProvider({ apiUrl, apiKey: "k", timeoutMs: 500, instanceId: config.instanceId! });
  const c = new Controller({
    db: h.db.db,
    provider,
    providerTarget: "emulator",
    runner: createRunnerClient({ apiKey: "k", timeoutMs: 500, toolboxUrl: (id, o) => provider.toolboxUrl(id, o) }),
    identity: { ...currentProcessIdentity(), bootId: crypto.randomUUID() },
    config: { ...h.service().config, pollMs: 30, breakerProbeMs: 50, breakerProbeCapMs: 100, ...config },
    log: pino({ level: "silent" }),
  });
  controllers.push(c);
  return c;
}

/** A run interrupted mid-session whose executor drained: the next controller of its instance takes it up at once. */
async function interruptedRun(instanceId: string, label: string): Promise<string> {
  const { db } = h.db;
  const me = currentProcessIdentity();
  await db.instance.upsert({ where: { id: instanceId }, create: { id: instanceId, name: instanceId }, update: {} });
  const drained = `drained-${crypto.randomUUID()}`;
  await db.controllerProcess.create({ data: { bootId: drained, instanceId, pid: me.pid, startedAt: new Date(me.startedAt), hostname: me.hostname, pidSpace: me.pidSpace, stoppedAt: new Date(), stopReason: "drain" } });
  const run = await db.run.create({
    data: {
      ...base(instanceId, label),
      status: "running",
      phase: "session_open",
      turnsDone: 1,
      runnerInstanceId: "ri-1",
      sessionId: "s-1",
      executorBootId: drained,
      checkpoint: { turn: 1, sessionId: "s-1", providerLeaseId: `sbx-${label}`, remoteCwd: "/home/sandbox/work" },
    },
  });
  await db.environmentLease.create({
    data: { runId: run.id, instanceId, companyId: "co-1", provider: "emulator", providerLeaseId: `sbx-${label}`, sandboxName: `rw-${label}`, remoteCwd: "/home/sandbox/work", acquisitionOutcome: "created", status: "active" },
  });
  return run.id;
}

async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

let now: Date;
let garbage: http.Server;

beforeAll(async () => {
  h = await startControllerHarness();
  const { db } = h.db;

  // A provider outage, as the controller records it (§2.8): a recovery_attempt `wait`, provider_wait_since.
  ids.wait = await interruptedRun("inst-wait", "wait");
  const waiting = controllerAt(`http://127.0.0.1:${await closedPort()}`, { instanceId: "inst-wait", recoveryMaxAttempts: 3 });
  await waiting.boot();
  waiting.start();
  // A provider that answers garbage: the run's own trouble, counted, and a long back-off.
  ids.backoff = await interruptedRun("inst-backoff", "backoff");
  garbage = http.createServer((_req, res) => res.writeHead(200, { "content-type": "text/html" }).end("<html>maintenance</html>"));
  await new Promise<void>((resolve) => garbage.listen(0, "127.0.0.1", resolve));
  const failing = controllerAt(`http://127.0.0.1:${(garbage.address() as net.AddressInfo).port}`, { instanceId: "inst-backoff", recoveryMaxAttempts: 5, recoveryBackoffMs: 600_000 });
  await failing.boot();
  failing.start();
  await waitFor("the outage's wait and the counted attempt", async () => {
    const [w, b] = await Promise.all([db.run.findUniqueOrThrow({ where: { id: ids.wait! } }), db.run.findUniqueOrThrow({ where: { id: ids.backoff! } })]);
    return w.providerWaitSince && b.recoveryAttempts === 1 ? true : null;
  }, 30_000);
  await waiting.stop("test_end");
  await failing.stop("test_end");

  // Two controllers' own rows: one that goes on heartbeating, one that falls silent.
  const live = controllerAt("http://127.0.0.1:1", { instanceId: "inst-b" });
  const silent = controllerAt("http://127.0.0.1:1", { instanceId: "inst-b" });
  await live.boot();
  await silent.boot();
  await new Promise((r) => setTimeout(r, LIMITS.silenceWindowMs + 300));
  await live.heartbeat();
  now = await databaseNow(db);
  const liveBoot = live.ctx.identity.bootId;
  const at = (ms: number) => new Date(now.getTime() - ms);
  const run = async (key: string, data: Record<string, unknown>) => {
    ids[key] = (await db.run.create({ data: { ...base("inst-b", key), ...data } })).id;
  };
  const turning = { status: "running", phase: "session_open", turnsDone: 1, turnsPlanned: 3, executorBootId: liveBoot, createdAt: at(60_000) };
  await run("silent", { ...turning, executorBootId: silent.ctx.identity.bootId, lastRunnerStateAt: at(5_000) });
  await run("healthy", { ...turning, lastRunnerStateAt: at(5_000) });
  await run("old", { status: "queued", createdAt: at(LIMITS.maxAgeMs + 1) });
  await run("oldEdge", { status: "queued", createdAt: at(LIMITS.maxAgeMs) });
  await run("turn", { ...turning, lastRunnerStateAt: at(LIMITS.maxTurnMs + 1) });
  await run("turnEdge", { ...turning, lastRunnerStateAt: at(LIMITS.maxTurnMs) });
  // Its own two-hour budget: 41 minutes into a turn is not overdue.
  await run("turnBudget", { ...turning, turnTimeoutMs: 2 * 3600_000, lastRunnerStateAt: at(LIMITS.maxTurnMs + 60_000) });
  await run("ended", { status: "failed", outcome: "terminal_failure", failureCode: "native_session_interrupted", createdAt: at(10 * LIMITS.maxAgeMs), executorBootId: silent.ctx.identity.bootId });
  await run("elsewhere", { status: "queued", companyId: "co-2", createdAt: at(LIMITS.maxAgeMs * 2) });
}, 120_000);

afterAll(async () => {
  for (const c of controllers) await c.stop("test_end").catch(() => {});
  await new Promise<void>((resolve) => (garbage ? garbage.close(() => resolve()) : resolve()));
  await h?.close();
});

const list = (reason: (typeof STUCK_REASONS)[number] | "any", scope: Parameters<typeof listStuck>[1] = ALL) => listStuck(h.db.db, scope, { reason, pageSize: 100 }, LIMITS, now);
const byId = (out: StuckListOutput) => new Map(out.items.map((i) => [i.id, i]));
const name = (id: string) => Object.entries(ids).find(([, v]) => v === id)?.[0] ?? id;

describe("stuck runs", () => {
  it("lists each stuck run with every reason, and nothing healthy, ended or at the edge of a limit", async () => {
    const out = await list("any");
    const reasons = Object.fromEntries(out.items.map((i) => [name(i.id), i.findings.map((f) => f.reason)]));
    expect(reasons).toEqual({
      wait: ["provider_wait"],
      backoff: ["recovery_backoff"],
      silent: ["executor_silent"],
      old: ["over_age"],
      elsewhere: ["over_age"],
      turn: ["turn_overdue"],
    });
    expect(out.counts).toEqual({ any: 6, provider_wait: 1, recovery_backoff: 1, executor_silent: 1, over_age: 2, turn_overdue: 1 });
  });

  it("links each reason to the proof that explains it, or to none yet", async () => {
    const { db } = h.db;
    const out = byId(await list("any"));
    const waitProof = await db.proof.findFirstOrThrow({ where: { runId: ids.wait!, kind: "recovery_attempt", verdict: "wait" } });
    expect(out.get(ids.wait!)!.findings[0]).toMatchObject({ reason: "provider_wait", proof: { id: waitProof.id, kind: "recovery_attempt", verdict: "wait" } });
    const counted = await db.proof.findFirstOrThrow({ where: { runId: ids.backoff!, kind: "recovery_attempt", verdict: "try_again" } });
    const backoffRun = await db.run.findUniqueOrThrow({ where: { id: ids.backoff! } });
    expect(out.get(ids.backoff!)!.findings[0]).toEqual({
      reason: "recovery_backoff",
      attempts: 1,
      maxAttempts: env.RUNWARDEN_RECOVERY_MAX_ATTEMPTS,
      nextAttemptAt: backoffRun.recoveryNotBefore,
      lastError: expect.stringContaining("maintenance") as unknown,
      proof: { id: counted.id, kind: "recovery_attempt", verdict: "try_again" },
    });
    // No controller has judged the silent executor yet: no process_exit, the timeline then.
    expect(out.get(ids.silent!)!.findings[0]).toMatchObject({ reason: "executor_silent", proof: null });
    expect(out.get(ids.turn!)!.findings[0]).toMatchObject({ reason: "turn_overdue", turn: 2, limitMs: LIMITS.maxTurnMs, proof: null });
  });

  it("the SQL of each reason selects exactly the runs the engine's classifier gives that reason", async () => {
    const any = byId(await list("any"));
    for (const reason of STUCK_REASONS) {
      const selected = (await list(reason)).items.map((i) => i.id).sort();
      const classified = [...any.values()].filter((i) => i.findings.some((f) => f.reason === reason)).map((i) => i.id).sort();
      expect(selected.map(name), reason).toEqual(classified.map(name));
      expect((await list(reason)).items.every((i) => i.findings.some((f) => f.reason === reason))).toBe(true);
    }
  });

  it("keeps to the viewer's companies and the list's other filters", async () => {
    expect((await list("any", { all: false, companies: ["co-2"] })).items.map((i) => name(i.id))).toEqual(["elsewhere"]);
    expect((await list("any", { all: false, companies: [] })).counts.any).toBe(0);
    const queued = await listStuck(h.db.db, ALL, { reason: "any", status: "queued" }, LIMITS, now);
    expect(queued.items.map((i) => name(i.id)).sort()).toEqual(["elsewhere", "old"]);
    expect(await countStuck(h.db.db, ALL, { companyId: "co-2" }, LIMITS, now)).toMatchObject({ any: 1, over_age: 1 });
  });

  it("pages newest first with a cursor", async () => {
    const first = await listStuck(h.db.db, ALL, { reason: "any", pageSize: 5 }, LIMITS, now);
    expect(first.items).toHaveLength(5);
    const second = await listStuck(h.db.db, ALL, { reason: "any", pageSize: 5, cursor: first.nextCursor! }, LIMITS, now);
    expect(second.items).toHaveLength(1);
    expect(second.nextCursor).toBeNull();
    const all = [...first.items, ...second.items];
    expect(new Set(all.map((i) => i.id)).size).toBe(6);
    expect(all.map((i) => i.createdAt.getTime())).toEqual([...all].map((i) => i.createdAt.getTime()).sort((a, b) => b - a));
  });

  it("/api/metrics has a gauge per reason (with the dashboard's own limits)", async () => {
    const { body } = await renderMetrics(h.db.db);
    expect(body).toMatch(/runwarden_runs_stuck\{reason="provider_wait"\} 1\n/);
    expect(body).toMatch(/runwarden_runs_stuck\{reason="recovery_backoff"\} 1\n/);
    expect(body).toMatch(/runwarden_runs_stuck\{reason="any"\} \d+\n/);
  });

  it("reads live runs by index, not every run: EXPLAIN with 5,000 finished runs", async () => {
    const { db } = h.db;
    await db.$executeRawUnsafe(`INSERT INTO runs (id, instance_id, company_id, task_id, agent, provider, target, sandbox_mode, status, created_at, updated_at)
      SELECT gen_random_uuid(), 'inst-b', 'co-' || (g % 7), 'bulk-' || g, 'a', 'codex', 'remote', 'warm', 'succeeded', now() - g * interval '1 minute', now()
      FROM generate_series(1, 5000) g`);
    await db.$executeRawUnsafe("ANALYZE runs");
    for (const sql of [stuckPageSql(stuckListInput.parse({ reason: "any" }), ALL, now, LIMITS), stuckCountSql({}, ALL, now, LIMITS)]) {
      const plan = await db.$queryRawUnsafe<Array<{ "QUERY PLAN": string }>>(`EXPLAIN ${sql.text}`, ...sql.values);
      const text = plan.map((r) => r["QUERY PLAN"]).join("\n");
      expect(text, text).not.toMatch(/Seq Scan on runs/);
      expect(text, text).toMatch(/Index (Only )?Scan .*on runs|Bitmap Index Scan on runs/);
    }
    // Still the same answer with them there.
    expect((await list("any")).counts.any).toBe(6);
  });
});
