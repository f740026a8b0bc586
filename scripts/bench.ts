/**
 * `npm run bench`: the figures docs/cli.md lists, measured on this machine with real
 * parts (PostgreSQL, the emulator over HTTP, real controller processes).
 *   1. restart → orphan destroyed: a controller is SIGKILLed between an intent's commit
 *      and its lease's commit; a new controller starts; time until the orphan is gone.
 *   2. sweep throughput: intents judged per second, with and without provider calls.
 *   3. engine throughput: pure decisions per second.
 */
import crypto from "node:crypto";
import { Command, InvalidArgumentError } from "commander";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { evidenceIdentity } from "../server/controller/context";
import { FAST_CONTROLLER_ENV, launchController, type ControllerProcessHandle } from "../server/controller/launch";
import { json } from "../server/controller/records";
import { reclaimBatching, sweepCreationIntents } from "../server/controller/sweeps";
import { createDb } from "../server/db/client";
import { openDatabase } from "../server/db/embedded";
import { migrate } from "../server/db/migrate";
import { withDatabase } from "../server/db/url";
import { decide } from "../server/engine";
import { DEFAULT_TRANSITION_MS } from "../server/emulator/context";
import { startEmulator } from "../server/emulator/server";
import { EmulatorAdminClient } from "../server/emulator/admin-client";
import { env } from "../server/env";
import { currentProcessIdentity } from "../server/process/identity";
import { exitedProcessIdentity } from "../server/process/exited";
import { DaytonaProvider } from "../server/providers/daytona";
import { buildLabels, creationName } from "../server/providers/labels";
import { submitRun } from "../server/runs/submit";
import { admin as adminSql } from "./lib/admin";
import { abandonIntents, benchController, emulatorProcess, reclaimFloor } from "./bench/emulator";

const say = (line: string) => process.stdout.write(`${line}\n`);

// `npm run bench -- --scale [N] [--json FILE] [--reps R]`: the figures at scale (docs/decisions/0003-cost-at-scale.md).
const cli = new Command("bench")
  .option("--scale [runs]", "generate this many runs (default 1,000,000) and measure every page and sweep at N/10 and N", positiveInt)
  .option("--json <file>", "with --scale: write the figures as JSON")
  .option("--reps <n>", "with --scale or --orphans: timed repetitions per figure", positiveInt, 30)
  .option("--backlog <n>", "pending intents of a live creator in front of the orphan in section 1b", nonNegativeInt, 50_000)
  .option("--reclaims <n>", "abandoned intents reclaimed in section 2b", positiveInt, 2_000)
  .option("--orphans [sizes]", "the orphans page before and after its inventory at these sandbox counts (default 1000,10000), with RSS over 20 polls")
  .option("--polls <n>", "with --orphans: polls per RSS figure", positiveInt, 20)
  .option("--no-browser", "with --scale or --orphans: leave out the figures taken through the production server and Chromium (page load, server RSS)")
  .option("--forecast [sizes]", "the time of a restart forecast of N live runs with real sandboxes in the emulator (default 200,1000), next to the provider's files/download floor")
  .option("--forecast-lanes <n>", "with --forecast: runs read at once", positiveInt, 8)
  .option("--client-js", "print the JavaScript each page of the last `next build` loads, gzipped, pass or fail against 200 KB, and stop")
  .option("--verbose", "with --client-js: each chunk by package (from browser source maps, when the build has them) and each page's packages")
  .option("--sweep-only", "run only sections 0, 2 and 2b (the sweep figures), skipping the restart rounds and the engine")
  .option("--in-process-emulator", "run the emulator inside the bench's own process, sharing its event loop with the sweep (as the first figures were taken); default: its own process, as `npm start` runs it")
  .option("--hosts <n>", "N runs with real turns on this many controllers of one instance (all but one in PID namespaces of their own), one SIGKILLed and one SIGSTOPped past the silence window mid-way, beside the same runs on one healthy controller", positiveInt)
  .option("--runs <n>", "with --hosts: runs (all in flight at once)", positiveInt, 150)
  .option("--turns <n>", "with --hosts: turns per run", positiveInt, 3)
  .option("--agent-ms <ms>", "with --hosts: what each turn's agent command takes (a sleep) before its marker line", nonNegativeInt, 500)
  .option("--keep", "with --hosts: keep the phases' databases for inspection (a failed bench always keeps them)")
  .option("--silence-ms <ms>", "with --hosts: the controllers' silence window (RUNWARDEN_EXECUTOR_TIMEOUT_MS)", positiveInt, 8000)
  .option("--pool [runs]", "one controller with this many runs in flight at once (default 200) against its fixed RUNWARDEN_DB_POOL_MAX: peak connections and time to settle, beside the same runs with a pool as large as the concurrency", positiveInt)
  .option("--platform [runs]", "a platform's loop over the HTTP API (docs/api.md): a token, N runs (default 50) submitted with keys by the example client, one answer lost and sent again, a controller SIGKILLed mid-way, every ending heard by a webhook receiver", positiveInt)
  .option("--outage-alerts [delays]", "the provider.outage_* alerts a receiver gets from a 5-minute outage (at 1:10) whose controller is SIGKILLed mid-way and replaced after each of these delays in ms (default 1000,10000,20000)")
  .option("--transition-ms <ms>", "the emulator's lifecycle transitions (create, start, stop, destroy) in ms; default: the emulator's own (Daytona-like) timings", nonNegativeInt)
  .parse(process.argv);
const opts = cli.opts<{ platform?: number | true; outageAlerts?: string | true; pool?: number | true; forecast?: string | true; forecastLanes: number; keep?: boolean; hosts?: number; runs: number; turns: number; agentMs: number; silenceMs: number; scale?: number | true; json?: string; reps: number; backlog: number; reclaims: number; transitionMs?: number; orphans?: string | true; polls: number; clientJs?: boolean; verbose?: boolean; browser: boolean; sweepOnly?: boolean; inProcessEmulator?: boolean }>();
if (opts.clientJs) {
  const { printClientJs, CLIENT_JS_LIMIT_KB } = await import("./bench/client-js");
  const pages = printClientJs(say, opts.verbose);
  process.exit(pages.some((p) => p.gzipKb > CLIENT_JS_LIMIT_KB) ? 1 : 0);
}
if (opts.platform !== undefined) {
  const { runPlatformBench } = await import("./bench/platform");
  const passed = await runPlatformBench({ runs: opts.platform === true ? 50 : opts.platform });
  process.exit(passed ? 0 : 1);
}
if (opts.outageAlerts !== undefined) {
  const { runOutageAlertsBench } = await import("./bench/outage-alerts");
  await runOutageAlertsBench({ delaysMs: opts.outageAlerts === true ? [1_000, 10_000, 20_000] : opts.outageAlerts.split(",").map(nonNegativeInt) });
  process.exit(0);
}
if (opts.forecast !== undefined) {
  const { runForecastBench } = await import("./bench/forecast");
  await runForecastBench({ sizes: opts.forecast === true ? [200, 1000] : opts.forecast.split(",").map(positiveInt), lanes: opts.forecastLanes });
  process.exit(0);
}
if (opts.orphans !== undefined) {
  const { runOrphansBench } = await import("./bench/orphans");
  const sizes = opts.orphans === true ? [1000, 10_000] : opts.orphans.split(",").map(positiveInt);
  await runOrphansBench({ sizes, reps: opts.reps, polls: opts.polls, browser: opts.browser });
  process.exit(0);
}
if (opts.hosts !== undefined) {
  const { runHostsBench } = await import("./bench/hosts");
  const passed = await runHostsBench({ hosts: opts.hosts, runs: opts.runs, turns: opts.turns, agentMs: opts.agentMs, silenceMs: opts.silenceMs, timeoutMs: 15 * 60_000, keep: opts.keep });
  process.exit(passed ? 0 : 1);
}
if (opts.pool !== undefined) {
  const { runPoolBench } = await import("./bench/pool");
  const passed = await runPoolBench({ runs: opts.pool === true ? 200 : opts.pool, timeoutMs: 10 * 60_000 });
  process.exit(passed ? 0 : 1);
}
if (opts.scale !== undefined) {
  const { runScaleBench } = await import("./bench/scale");
  await runScaleBench({ n: opts.scale === true ? 1_000_000 : opts.scale, json: opts.json, reps: opts.reps, browser: opts.browser });
  process.exit(0);
}

function nonNegativeInt(value: string): number {
  const n = Number(value.replaceAll("_", ""));
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError("must be a whole number, 0 or more");
  return n;
}

function positiveInt(value: string): number {
  const n = Number(value.replaceAll("_", ""));
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError("must be a positive whole number");
  return n;
}

const server = await openDatabase({ env, database: "postgres" });
const stamp = `rwbench_${Date.now().toString(36)}`;
const made: string[] = [];

async function database(tag: string): Promise<string> {
  const name = `${stamp}_${tag}`;
  await adminSql(server.adminUrl, `CREATE DATABASE ${name}`);
  made.push(name);
  return withDatabase(server.adminUrl, name);
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

async function until(check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 20));
  }
}


const appUrl = await database("app");
await migrate(appUrl);
const emuUrl = await database("emu");
const transitionMs = opts.transitionMs;
const transitions = transitionMs === undefined ? DEFAULT_TRANSITION_MS : { create: transitionMs, start: transitionMs, stop: transitionMs, destroy: transitionMs };
const emulator = opts.inProcessEmulator ? await startEmulator({ port: 0, databaseUrl: emuUrl, transitionMs: transitions }) : await emulatorProcess(emuUrl, transitions);

const admin = new EmulatorAdminClient(emulator.url, "emulator-key");
// Sized as main.ts sizes a controller's pool (the lanes, their teardowns, the pager).
const db = createDb(appUrl, { max: env.RUNWARDEN_SWEEP_LANES + 8 });
const procs: ControllerProcessHandle[] = [];

try {
  // ── 0. the provider's own round trip: the floor the figures below stand on ──
  const floorProvider = new DaytonaProvider({ apiUrl: emulator.url, apiKey: "emulator-key", instanceId: "inst-bench" });
  const createMs: number[] = [];
  const destroyMs: number[] = [];
  for (let i = 0; i < 10; i++) {
    const id = crypto.randomUUID();
    let t0 = Date.now();
    const name = creationName("floor", id);
    const sbx = await floorProvider.create({ name, labels: buildLabels({ instanceId: "inst-bench", companyId: "co-floor", operationId: id }) });
    await until(async () => (await floorProvider.getByName(name))?.state === "started", 10_000);
    createMs.push(Date.now() - t0);
    t0 = Date.now();
    await floorProvider.destroy(sbx.id);
    await until(async () => (await admin.sandboxes({ includeDestroyed: true })).find((x) => x.id === sbx.id)?.state === "destroyed", 10_000);
    destroyMs.push(Date.now() - t0);
  }
  const floorDestroy = median(destroyMs);
  say(`\n0. the provider's own round trip (emulator ${opts.inProcessEmulator ? "in the bench's process" : "in its own process"}, transitions: ${transitionMs === undefined ? "its defaults" : `${transitionMs} ms`}; 10 sandboxes)`);
  say(`   create → started: median ${median(createMs)} ms; destroy → destroyed: median ${floorDestroy} ms`);

  // ── 1. restart → orphan destroyed ──
  const rounds = 5;
  let taskNo = 0;
  const restartRounds = async (title: string) => {
    say(`\n${title}`);
    const fromSpawn: number[] = [];
    const fromReady: number[] = [];
    for (let i = 0; i < rounds; i++) {
      const base = {
        DATABASE_URL: appUrl,
        EMULATOR_URL: emulator.url,
        RUNWARDEN_INSTANCE_ID: "inst-bench",
        RUNWARDEN_CONTROLLER_HOME: fs.mkdtempSync(path.join(os.tmpdir(), "rw-bench-")),
        RUNWARDEN_SWEEP_INTERVAL_MS: "10000",
        LOG_LEVEL: "warn",
      };
      const run = await submitRun(db, "inst-bench", { companyId: "co-1", taskId: `bench-${taskNo++}`, agent: "a", provider: "codex", turns: 1 }, { id: "bench", role: "operator" });
      const a = launchController({ ...FAST_CONTROLLER_ENV, ...base, RUNWARDEN_CRASH_AT: "after_create" });
      await a.exited;
      const orphan = (await admin.sandboxes()).find((s) => s.labels["runwarden.run"] === run.id && s.state !== "destroyed");
      if (!orphan) throw new Error("the crash left no orphan");
      const t0 = Date.now();
      const b = launchController({ ...FAST_CONTROLLER_ENV, ...base });
      procs.push(b);
      await b.ready;
      const t1 = Date.now();
      await until(async () => (await admin.sandboxes({ includeDestroyed: true })).find((s) => s.id === orphan.id)?.state === "destroyed", 60_000);
      const t2 = Date.now();
      fromSpawn.push(t2 - t0);
      fromReady.push(t2 - t1);
      say(`   round ${i + 1}: orphan destroyed ${t2 - t0} ms after the restart (${t2 - t1} ms after the controller was ready)`);
      await until(async () => (await db.run.findUniqueOrThrow({ where: { id: run.id } })).status === "succeeded", 60_000);
      b.kill("SIGTERM");
      await b.exited;
    }
    say(`   median ${median(fromSpawn)} ms from restart (min ${Math.min(...fromSpawn)}, max ${Math.max(...fromSpawn)}); median ${median(fromReady)} ms from ready (×${(median(fromReady) / Math.max(1, floorDestroy)).toFixed(1)} the provider's own destroy → destroyed, ${floorDestroy} ms)`);
  };
  if (!opts.sweepOnly) await restartRounds(`1. restart → orphan destroyed (${rounds} rounds, SIGKILL after the create, before the lease commits)`);
  say(`   (the rule it replaces waited nextAttemptAt = created + ${env.RUNWARDEN_INTENT_WAIT_MS / 60_000} min)`);
  if (opts.backlog > 0 && !opts.sweepOnly) {
    // A live creator (this process) with a backlog of pending intents whose ids all sort before
    // any the controllers make: a sweep in id order reads the whole backlog before the orphan.
    const live = evidenceIdentity({ ...currentProcessIdentity(), bootId: crypto.randomUUID() });
    const t = Date.now();
    // 2,000 rows a statement: their bind parameters stay under PostgreSQL's 32,767 (Prisma splits a larger one).
    for (let i = 0; i < opts.backlog; i += 2000) {
      const rows = [];
      for (let j = i; j < Math.min(opts.backlog, i + 2000); j++) {
        const id = `00000000-0000-4000-8000-${j.toString().padStart(12, "0")}`;
        rows.push({ id, instanceId: "inst-bench", companyId: "co-1", runId: `backlog-${j}`, creationName: creationName("rw", id), labels: json({}), creator: json(live), creatorBootId: live.bootId, settleDeadline: new Date(Date.now() + 60 * 60_000), nextAttemptAt: new Date(Date.now() + 60 * 60_000) });
      }
      await db.sandboxCreationIntent.createMany({ data: rows });
    }
    await restartRounds(`1b. restart → orphan destroyed behind ${opts.backlog} pending intents of a live creator (seeded in ${((Date.now() - t) / 1000).toFixed(1)} s; ${rounds} rounds)`);
    await db.sandboxCreationIntent.deleteMany({ where: { creatorBootId: live.bootId } });
  }

  // ── 2. sweep throughput ──
  const { controller, provider, identity } = await benchController(db, emulator.url, "inst-bench");
  const dead = evidenceIdentity(await exitedProcessIdentity());
  const seed = async (n: number, creator: object, plant: boolean) => {
    const rows = [];
    for (let i = 0; i < n; i++) {
      const id = crypto.randomUUID();
      const name = creationName("rw", id);
      if (plant) await admin.plant({ name, labels: buildLabels({ instanceId: "inst-bench", companyId: "co-1", operationId: id }) });
      rows.push({ id, instanceId: "inst-bench", companyId: "co-1", runId: `probe-${id}`, creationName: name, labels: json({}), creator: json(creator), settleDeadline: new Date(Date.now() + 60_000), nextAttemptAt: new Date(Date.now() + 30 * 60_000) });
    }
    await db.sandboxCreationIntent.createMany({ data: rows });
  };
  say(`\n2. sweep throughput (one controller, in-process sweep, ${controller.ctx.config.sweepLanes} provider calls at once in batches of ${reclaimBatching(controller.ctx.config.sweepLanes).batchSize}, pages of ${controller.ctx.config.pageSize})`);
  const waiting = 5000;
  await seed(waiting, evidenceIdentity(identity), false);
  // One warm-up pass, then the median of 5 (as the --scale figures): a first pass runs cold code.
  const passMs: number[] = [];
  let s = await sweepCreationIntents(controller.ctx, "bench");
  for (let i = 0; i < 5; i++) {
    const t0 = performance.now();
    s = await sweepCreationIntents(controller.ctx, "bench");
    passMs.push(performance.now() - t0);
  }
  say(`   ${s.judged} intents of a live creator judged (wait): median pass ${median(passMs).toFixed(0)} ms, ${((s.judged / median(passMs)) * 1000).toFixed(0)} intents/s (passes ${passMs.map((x) => x.toFixed(0)).join(", ")} ms, after a warm-up pass)`);
  let t = Date.now();
  let secs: number;
  const abandoned = 300;
  await seed(abandoned, dead, true);
  t = Date.now();
  s = await sweepCreationIntents(controller.ctx, "bench");
  secs = (Date.now() - t) / 1000;
  say(`   ${s.judged} intents judged, ${s.reclaimed} reclaimed and ${s.destroyed} destroyed through the provider in ${secs.toFixed(2)} s: ${(s.judged / secs).toFixed(0)} intents/s overall, ${(s.reclaimed / secs).toFixed(0)} reclaims/s`);

  // 2b. a larger batch: reclaims/s beside the provider's own round trips for the same work
  // (get by name, destroy per sandbox, as many at a time as the sweep has lanes:
  // what a reclaim asks of it).
  const lanes = controller.ctx.config.sweepLanes;
  const floorN = Math.min(400, opts.reclaims);
  const floorPerSec = await reclaimFloor(admin, provider, { n: floorN, lanes, instanceId: "inst-bench", companyId: "co-1" });
  await abandonIntents(db, admin, opts.reclaims, "inst-bench", "co-1", dead);
  t = Date.now();
  s = await sweepCreationIntents(controller.ctx, "bench");
  secs = (Date.now() - t) / 1000;
  say(`   2b. ${s.reclaimed} of ${opts.reclaims} abandoned intents reclaimed and ${s.destroyed} destroyed in ${secs.toFixed(2)} s: ${(s.reclaimed / secs).toFixed(0)} reclaims/s (floor: the provider's own get by name + destroy, ${lanes} at a time, ${floorPerSec.toFixed(0)} sandboxes/s; ×${(floorPerSec / Math.max(1e-9, s.reclaimed / secs)).toFixed(1)})`);
  await controller.stop("bench");

  // ── 3. engine ──
  if (!opts.sweepOnly) say("\n3. engine (pure decide(), fixtures from server/engine/fixtures)");
  const dir = path.resolve("server/engine/fixtures");
  for (const file of opts.sweepOnly ? [] : fs.readdirSync(dir).filter((f) => f.endsWith(".json")).slice(0, 6)) {
    const bundle = JSON.parse(fs.readFileSync(path.join(dir, file), "utf8")) as unknown;
    // Warmed up, then the median of 5 timed batches: one batch swings with the JIT and the machine.
    const n = 50_000;
    for (let i = 0; i < n; i++) decide(bundle);
    const batches: number[] = [];
    for (let r = 0; r < 5; r++) {
      const t3 = process.hrtime.bigint();
      for (let i = 0; i < n; i++) decide(bundle);
      batches.push(Number(process.hrtime.bigint() - t3));
    }
    const ns = median(batches);
    say(`   ${file.padEnd(40)} ${((n / ns) * 1e9).toFixed(0)} decisions/s (${(ns / n / 1000).toFixed(1)} µs each, median of 5 × ${n})`);
  }
} finally {
  for (const p of procs) p.kill("SIGKILL");
  await db.$disconnect();
  await emulator.killAllProcesses().catch(() => 0);
  await emulator.close();
  for (const name of made) await adminSql(server.adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await server.stop();
}
process.exit(0);
