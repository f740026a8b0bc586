import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createDb, type Db } from "../db/client";
import { submitRun } from "../runs/submit";
import { createTestDatabase, type TestDatabase } from "../test/db";
import { createThrowawayDatabase, type ThrowawayDatabase } from "../test/emulator";
import { EmulatorChild, freePort, killSandboxProcessesUnder } from "../test/emulator-child";
import { spawnController, type ControllerProcessHandle } from "../test/controller-process";
import { waitFor } from "../test/controller";
import { sampleConnections } from "../../scripts/bench/connections";
import { HEARTBEAT_MS } from "./controller";

/**
 * A controller's database pool does not grow with its concurrency: one real controller
 * process with five times as many runs in flight as its pool has connections, every one of
 * them waiting on its turn, holds at most its pool (RUNWARDEN_DB_POOL_MAX) plus its heartbeat's
 * own connection (server/controller/main.ts, server/db/heartbeat.ts), and every run succeeds.
 * The property does not depend on size: 40 runs against a pool of 8 press on the pool as 200
 * against 12 do; `npm run bench -- --pool 200` (scripts/bench/pool.ts) measures the full figure.
 * The emulator runs in a process of its own, so the sandboxes' toolbox calls do not share the
 * test's event loop.
 */

const RUNS = 40;
const POOL_MAX = 8;
/** The pool, and the heartbeat's connection of its own. Migrations' connection at start is closed before the pool opens. */
const CONNECTION_LIMIT = POOL_MAX + 1;
const BATCH = 20;
// The test's own connections, left out of the controller's count.
const OBSERVER = "runwarden-pool-test";

let database: TestDatabase;
let emuDatabase: ThrowawayDatabase;
let db: Db;
let scratch: string;
let emulator: EmulatorChild | null = null;
let emulatorUrl = "";
let ctl: ControllerProcessHandle | null = null;
let goWriter: number | null = null;

beforeAll(async () => {
  const adminUrl = inject("adminUrl");
  database = await createTestDatabase(adminUrl, inject("templateDatabase"), inject("runPrefix"));
  const url = new URL(database.url);
  url.searchParams.set("application_name", OBSERVER);
  db = createDb(url.toString(), { max: 4 });
  emuDatabase = await createThrowawayDatabase(adminUrl, inject("runPrefix"), "poolemu");
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), "rw-pool-"));
  emulator = new EmulatorChild({ port: await freePort(), adminUrl, database: emuDatabase.name, dataDir: path.join(scratch, "emu") });
  emulatorUrl = await emulator.start();
});

afterAll(async () => {
  ctl?.kill("SIGKILL");
  await ctl?.exited;
  await emulator?.kill();
  // The sandboxes' detached processes end with the test (one pass over /proc, not one per sandbox).
  killSandboxProcessesUnder(scratch);
  if (goWriter !== null) fs.closeSync(goWriter);
  await db?.$disconnect();
  await database?.drop();
  await emuDatabase?.drop();
  fs.rmSync(scratch, { recursive: true, force: true });
});

describe(`a controller with ${RUNS} runs in flight and a pool of ${POOL_MAX}`, () => {
  it(`holds at most ${CONNECTION_LIMIT} database connections (its pool and its heartbeat), and every run succeeds`, { timeout: 300_000 }, async () => {
    // Every turn waits for a writer on the go FIFO (blocked in open(2), no polling), so all the
    // runs are in flight at once, each waiting on its turn.
    const go = path.join(scratch, "go");
    execFileSync("mkfifo", [go]);
    const sampler = sampleConnections(inject("adminUrl"), database.name, OBSERVER);
    ctl = spawnController({
      DATABASE_URL: database.url,
      EMULATOR_URL: emulatorUrl,
      RUNWARDEN_INSTANCE_ID: "inst-a",
      RUNWARDEN_CONTROLLER_HOME: path.join(scratch, "home"),
      RUNWARDEN_CONCURRENCY: String(RUNS),
      RUNWARDEN_DB_POOL_MAX: String(POOL_MAX),
      // Many sandboxes start at once on a small machine: slow answers are not what this measures.
      RUNWARDEN_SESSION_OPEN_TIMEOUT_MS: "60000",
      RUNWARDEN_CREATE_TIMEOUT_MS: "60000",
      DAYTONA_TIMEOUT_MS: "120000",
      RUNWARDEN_SETTLE_MS: undefined,
      RUNWARDEN_TURN_MS: "0",
      LOG_LEVEL: "warn",
    });
    await ctl.ready;
    // Submitted a batch at a time, each once the one before waits on its turn: every sandbox
    // starting at the same moment would measure this small machine, not the pool.
    const actor = { id: "test", role: "operator" as const };
    const inFlight = () => db.run.count({ where: { status: "running", phase: "session_open", turnsDone: 0 } });
    for (let i = 0; i < RUNS; i += BATCH) {
      for (let j = i; j < Math.min(RUNS, i + BATCH); j++) {
        await submitRun(db, "inst-a", { companyId: "co-1", taskId: `pool-${j}`, agent: "a", provider: "codex", turns: 1, agentCommand: `: < '${go}'` }, actor);
      }
      const want = Math.min(RUNS, i + BATCH);
      await waitFor(`${want} runs waiting on their turn`, async () => (await inFlight()) === want, 120_000).catch(async (err: unknown) => {
        const rows = await db.run.groupBy({ by: ["status", "phase", "failureCode"], _count: true });
        throw new Error(`${String(err)}: ${JSON.stringify(rows)}; controller: ${ctl?.output.slice(-3).join(" | ")}`);
      });
    }
    // Opened read-write it never blocks, and stays open: every turn's open returns at once.
    goWriter = fs.openSync(go, fs.constants.O_RDWR);
    const settled = await waitFor("every run to settle", async () => {
      const rows = await db.run.groupBy({ by: ["status", "failureCode"], _count: true });
      return rows.every((r) => r.status === "succeeded" || r.status === "failed") ? rows : null;
    }, 120_000);
    const { peak, names } = await sampler.stop();
    console.log(`pool: ${RUNS} runs in flight, RUNWARDEN_DB_POOL_MAX=${POOL_MAX}: the controller held at most ${peak} connections (${names.join(", ")})`);

    expect(peak).toBeLessThanOrEqual(CONNECTION_LIMIT);
    // And the runs did press on it: a scenario too small to fill the pool could not tell a pool
    // that grows with concurrency from a fixed one.
    expect(peak).toBeGreaterThanOrEqual(POOL_MAX);
    expect(settled.map((r) => ({ status: r.status, code: r.failureCode, n: r._count }))).toEqual([{ status: "succeeded", code: null, n: RUNS }]);
    // Each controller names its connections, so pg_stat_activity counts them per controller.
    const bootId = /bootId=(\S+)/.exec(ctl.output.find((l) => l.startsWith("controller ready:")) ?? "")?.[1];
    expect(names).toEqual([`runwarden-controller ${bootId}`]);
  });
});

describe("a controller whose every pooled connection waits on a lock", () => {
  it("keeps its heartbeat: its own connection, so no other host judges it silent", { timeout: 300_000 }, async () => {
    ctl?.kill("SIGKILL");
    await ctl?.exited;
    ctl = spawnController({
      DATABASE_URL: database.url,
      EMULATOR_URL: emulatorUrl,
      RUNWARDEN_INSTANCE_ID: "inst-h",
      RUNWARDEN_CONTROLLER_HOME: path.join(scratch, "home-h"),
      RUNWARDEN_DB_POOL_MAX: "2",
      RUNWARDEN_SESSION_OPEN_TIMEOUT_MS: "30000",
      RUNWARDEN_TURN_MS: "20",
      LOG_LEVEL: "warn",
    });
    await ctl.ready;
    const bootId = /bootId=(\S+)/.exec(ctl.output.find((l) => l.startsWith("controller ready:")) ?? "")?.[1];
    expect(bootId).toBeTruthy();
    const actor = { id: "test", role: "operator" as const };
    for (let i = 0; i < 3; i++) await submitRun(db, "inst-h", { companyId: "co-1", taskId: `busy-${i}`, agent: "a", provider: "codex", turns: 50, agentCommand: "true" }, actor);
    await waitFor("runs past their first turn", async () => (await db.run.count({ where: { instanceId: "inst-h", status: "running", turnsDone: { gt: 0 } } })) >= 2, 120_000);

    // Writes to runs and their events wait: every pooled connection ends up waiting on the lock.
    const holder = new pg.Client({ connectionString: database.url });
    holder.on("error", () => {});
    await holder.connect();
    try {
      await holder.query("BEGIN");
      await holder.query("LOCK TABLE runs, run_events IN EXCLUSIVE MODE");
      const waiting = async () =>
        (await holder.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'", [`runwarden-controller ${bootId}`])).rows[0]?.n ?? 0;
      // Read outside the locked tables, on a connection of the test's own.
      const seen = async () => (await holder.query<{ at: Date }>("SELECT last_seen_at AS at FROM controller_processes WHERE boot_id = $1", [bootId])).rows[0]!.at.getTime();
      await waitFor("both pooled connections waiting on the lock", async () => (await waiting()) >= 2, 30_000);
      // Two beats (last_seen_at moved by two intervals, on the database's clock) within three and
      // a half intervals of the pool being all waiting: a heartbeat held back by the pool misses
      // them (docs/rules.md §2.10: a controller heartbeats on a connection of its own).
      const before = await seen();
      await waitFor(`two heartbeats (${HEARTBEAT_MS} ms apart) while the pool waits`, async () => (await seen()) - before >= 2 * HEARTBEAT_MS, 3.5 * HEARTBEAT_MS);
      // The pool is still all waiting: what moved the heartbeat was not a pooled connection.
      expect(await waiting()).toBeGreaterThanOrEqual(2);
      await holder.query("COMMIT");
    } finally {
      await holder.end().catch(() => {});
    }
    await waitFor("the runs to go on once the lock is gone", async () => (await db.run.count({ where: { instanceId: "inst-h", turnsDone: { gt: 5 } } })) >= 1, 120_000);
  });
});
