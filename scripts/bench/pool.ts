/**
 * `npm run bench -- --pool [runs]` (default 200): the full-size figure of
 * server/controller/pool.int.test.ts. One real controller process with N runs in flight at
 * once, every turn blocked on a FIFO until all of them wait on it, then released together:
 * the peak connections it held (pg_stat_activity, by its application_name) against its fixed
 * pool (RUNWARDEN_DB_POOL_MAX, plus the heartbeat's own connection: server/controller/main.ts),
 * and the time from the release to every run settled. Beside it, the floor: the same N runs on
 * a controller whose pool is as large as its concurrency (connections are never what a run
 * waits for), in the same invocation, so the settle time's ratio is what the fixed pool costs.
 * Fails unless every run succeeds and the fixed pool's controller stays within pool + 1.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { FAST_CONTROLLER_ENV, launchController, type ControllerProcessHandle } from "../../server/controller/launch";
import { createDb } from "../../server/db/client";
import { migrate } from "../../server/db/migrate";
import { DEFAULT_TRANSITION_MS } from "../../server/emulator/context";
import { env } from "../../server/env";
import { submitRun } from "../../server/runs/submit";
import { sampleConnections } from "./connections";
import { emulatorProcess } from "./emulator";
import { throwawayDatabases } from "../lib/throwaway-databases";

const say = (line = "") => process.stdout.write(`${line}\n`);
const INSTANCE = "inst-pool";
const ACTOR = { id: "bench", role: "operator" as const };
/** The bench's own connections, left out of the controller's count. */
const OBSERVER = "runwarden-bench-pool";
/** Runs submitted, then awaited in flight, a batch at a time: every sandbox starting at once would measure this machine, not the pool. */
const SUBMIT_BATCH = 25;
/** RUNWARDEN_DB_POOL_MAX's and RUNWARDEN_CONCURRENCY's upper bounds (server/env.ts). */
const POOL_MAX_LIMIT = 200;
const CONCURRENCY_LIMIT = 256;

export interface PoolBenchOptions {
  runs: number;
  /** Give up (and fail) when a batch is not in flight, or the runs not settled, after this long. */
  timeoutMs: number;
}

interface PhaseFigures {
  label: string;
  poolMax: number;
  /** First submit → the last batch waiting on its turn. */
  inFlightMs: number;
  /** The FIFO opened (every turn released at once) → every run terminal. */
  settleMs: number;
  peak: number;
  names: string[];
  outcome: Array<{ status: string; code: string | null; n: number }>;
}

export async function runPoolBench(o: PoolBenchOptions): Promise<boolean> {
  // All N in flight at once on one controller: its concurrency is N.
  if (o.runs > CONCURRENCY_LIMIT) throw new Error(`--pool takes at most ${CONCURRENCY_LIMIT} runs (RUNWARDEN_CONCURRENCY's bound)`);
  const dbs = await throwawayDatabases("rwpool");
  const { server } = dbs;
  const database = (tag: string) => dbs.create(tag);
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "rw-pool-"));
  let emulator: Awaited<ReturnType<typeof emulatorProcess>> | null = null;
  try {
    emulator = await emulatorProcess(await database("emu"), DEFAULT_TRANSITION_MS);
    const fixed = env.RUNWARDEN_DB_POOL_MAX;
    const unbounded = Math.min(POOL_MAX_LIMIT, Math.max(2, o.runs));
    say(`\npool bench: ${o.runs} runs in flight on one controller (concurrency ${o.runs}), each turn blocked on a FIFO until all wait, then released at once; ${os.cpus().length} cores, load ${loadAvg()}`);
    const emu = emulator;
    const run = async (label: string, poolMax: number) => {
      const figures = await phase(o, { label, poolMax, appUrl: await database(label), adminUrl: server.adminUrl, emulatorUrl: emu.url, dir: path.join(scratch, label) });
      // The sandboxes' detached processes end with their phase.
      await emu.killAllProcesses().catch(() => 0);
      return figures;
    };
    const pool = await run("fixed", fixed);
    const floor = await run("floor", unbounded);

    const w = 44;
    const row = (name: string, a: string, b: string, ratio = "") => say(`${name.padEnd(w)}  ${a.padEnd(22)}  ${b.padEnd(22)}  ${ratio}`);
    say();
    row("", `fixed pool`, `floor: pool = concurrency${o.runs > POOL_MAX_LIMIT ? ` (capped at ${POOL_MAX_LIMIT})` : ""}`, "ratio");
    row("runs in flight at once", String(o.runs), String(o.runs));
    row("RUNWARDEN_DB_POOL_MAX", String(pool.poolMax), String(floor.poolMax));
    row("peak connections (pool + heartbeat)", String(pool.peak), String(floor.peak), `×${(pool.peak / Math.max(1, floor.peak)).toFixed(2)}`);
    row("first submit → all in flight", secs(pool.inFlightMs), secs(floor.inFlightMs), `×${(pool.inFlightMs / Math.max(1, floor.inFlightMs)).toFixed(2)}`);
    row("released → every run settled", secs(pool.settleMs), secs(floor.settleMs), `×${(pool.settleMs / Math.max(1, floor.settleMs)).toFixed(2)}`);
    row("outcome", outcome(pool), outcome(floor));
    say(`(load ${loadAvg()}; the controllers' connections by application_name: ${[...pool.names, ...floor.names].join(", ") || "none seen"})`);

    const problems: string[] = [];
    for (const f of [pool, floor]) {
      const bad = f.outcome.filter((r) => r.status !== "succeeded");
      if (bad.length) problems.push(`${f.label}: not every run succeeded: ${outcome(f)}`);
      if (f.names.length !== 1) problems.push(`${f.label}: connections under ${f.names.length} names, not the controller's one: ${f.names.join(", ")}`);
    }
    if (pool.peak > pool.poolMax + 1) problems.push(`fixed: ${pool.peak} connections, over its pool of ${pool.poolMax} plus its heartbeat`);
    if (problems.length) {
      say(`\nFAILED:`);
      for (const p of problems) say(`  ✗ ${p}`);
      return false;
    }
    say(`\nPASSED: every run succeeded; the fixed pool's controller held at most ${pool.peak} connections (pool ${pool.poolMax} + heartbeat) with ${o.runs} runs in flight`);
    return true;
  } finally {
    await emulator?.killAllProcesses().catch(() => 0);
    await emulator?.close();
    await dbs.dropAll();
    await server.stop();
    fs.rmSync(scratch, { recursive: true, force: true });
  }
}

interface PhaseInput {
  label: string;
  poolMax: number;
  appUrl: string;
  adminUrl: string;
  emulatorUrl: string;
  dir: string;
}

async function phase(o: PoolBenchOptions, p: PhaseInput): Promise<PhaseFigures> {
  await migrate(p.appUrl);
  fs.mkdirSync(p.dir, { recursive: true });
  const observerUrl = new URL(p.appUrl);
  observerUrl.searchParams.set("application_name", OBSERVER);
  const db = createDb(observerUrl.toString(), { max: 4 });
  const go = path.join(p.dir, "go");
  execFileSync("mkfifo", [go]);
  const sampler = sampleConnections(p.adminUrl, new URL(p.appUrl).pathname.slice(1), OBSERVER);
  let ctl: ControllerProcessHandle | null = null;
  let goWriter: number | null = null;
  try {
    say(`\n── ${p.label}: RUNWARDEN_DB_POOL_MAX=${p.poolMax}`);
    ctl = launchController(
      {
        ...FAST_CONTROLLER_ENV,
        DATABASE_URL: p.appUrl,
        EMULATOR_URL: p.emulatorUrl,
        EMULATOR_API_KEY: "emulator-key",
        RUNWARDEN_INSTANCE_ID: INSTANCE,
        RUNWARDEN_CONTROLLER_HOME: path.join(p.dir, "home"),
        RUNWARDEN_CONCURRENCY: String(o.runs),
        RUNWARDEN_DB_POOL_MAX: String(p.poolMax),
        // Many sandboxes start at once on a small machine: slow answers are not what this measures.
        RUNWARDEN_SESSION_OPEN_TIMEOUT_MS: "60000",
        RUNWARDEN_CREATE_TIMEOUT_MS: "60000",
        DAYTONA_TIMEOUT_MS: "120000",
        RUNWARDEN_SETTLE_MS: undefined,
        RUNWARDEN_TURN_MS: "0",
        LOG_LEVEL: "warn",
      },
      { readyTimeoutMs: 60_000 },
    );
    await ctl.ready;
    const t0 = Date.now();
    const inFlight = () => db.run.count({ where: { status: "running", phase: "session_open", turnsDone: 0 } });
    for (let i = 0; i < o.runs; i += SUBMIT_BATCH) {
      const want = Math.min(o.runs, i + SUBMIT_BATCH);
      // Every turn waits for a writer on the FIFO (blocked in open(2), no polling).
      for (let j = i; j < want; j++) await submitRun(db, INSTANCE, { companyId: "co-pool", taskId: `pool-${j}`, agent: "a", provider: "codex", turns: 1, agentCommand: `: < '${go}'` }, ACTOR);
      await until(`${want} runs waiting on their turn`, async () => (await inFlight()) === want, o.timeoutMs, async () => JSON.stringify(await db.run.groupBy({ by: ["status", "phase", "failureCode"], _count: true })));
      say(`   [${secs(Date.now() - t0)}] ${want}/${o.runs} runs waiting on their turn, load ${loadAvg()}`);
    }
    const inFlightMs = Date.now() - t0;
    // Opened read-write it never blocks, and stays open: every turn's open returns at once.
    const t1 = Date.now();
    goWriter = fs.openSync(go, fs.constants.O_RDWR);
    const terminal = async () => {
      const rows = await db.run.groupBy({ by: ["status", "failureCode"], _count: true });
      return rows.every((r) => r.status === "succeeded" || r.status === "failed" || r.status === "cancelled") ? rows : null;
    };
    let rows = await terminal();
    const deadline = t1 + o.timeoutMs;
    while (!rows) {
      if (Date.now() > deadline) throw new Error(`${p.label}: the runs did not settle within ${secs(o.timeoutMs)}`);
      await sleep(50);
      rows = await terminal();
    }
    const settleMs = Date.now() - t1;
    const { peak, names } = await sampler.stop();
    say(`   [${secs(Date.now() - t0)}] every run settled ${secs(settleMs)} after the release; peak ${peak} connections`);
    return { label: p.label, poolMax: p.poolMax, inFlightMs, settleMs, peak, names, outcome: rows.map((r) => ({ status: r.status, code: r.failureCode, n: r._count })) };
  } finally {
    await sampler.stop();
    ctl?.kill("SIGKILL");
    await ctl?.exited;
    if (goWriter !== null) fs.closeSync(goWriter);
    await db.$disconnect();
  }
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs: number, explain: () => Promise<string>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${secs(timeoutMs)} waiting for ${what}: ${await explain()}`);
    await sleep(50);
  }
}

function outcome(f: PhaseFigures): string {
  return f.outcome.map((r) => `${r.status}${r.code ? ` (${r.code})` : ""} ${r.n}`).join(", ");
}

function secs(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

function loadAvg(): string {
  return os.loadavg().map((x) => x.toFixed(2)).join(" ");
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
