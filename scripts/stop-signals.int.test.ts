import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { portFree } from "./lib/processes";
import { adminUrlFor, clusterPort } from "../server/db/cluster";
import { createDb } from "../server/db/client";
import { withDatabase } from "../server/db/url";
import { submitRun } from "../server/runs/submit";
import { partsRunning, postgresRunning } from "../server/test/leftovers";
import { crashLines, productCleanup, productEnv, startProduct, waitUntil, type ProductLaunch, type ProductProcess } from "../server/test/product";

/**
 * `npm start` stops every part it started however it is told to stop, and a part never outlives
 * it (scripts/start.ts, server/lib/stop-signals.ts, scripts/lib/parent-guard.mjs). Launched as a
 * user launches it — `npm start`, in a pseudo-terminal (`script`), through `| tee` — and stopped
 * as a user, a terminal or a process manager stops it. What is left is read by this
 * installation's own marks — its ports, its data directory in a process's environment, its
 * PostgreSQL's postmaster.pid — never by a process name another installation shares. A run in
 * flight at the stop is finished by the next start on the same data directory, each turn once.
 */

const root = path.resolve(import.meta.dirname, "..");
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

const INSTANCE = "inst-signals";
const TURNS = 6;

async function product() {
  const dataRoot = fs.mkdtempSync(path.join(os.tmpdir(), "rw-signals-"));
  fs.chmodSync(dataRoot, 0o755);
  cleanups.push(() => fs.rmSync(dataRoot, { recursive: true, force: true }));
  const env = await productEnv({ RUNWARDEN_DATA_DIR: dataRoot, RUNWARDEN_INSTANCE_ID: INSTANCE });
  const start = (launch?: ProductLaunch) => {
    const p = startProduct(root, env, undefined, launch);
    cleanups.push(productCleanup(p, dataRoot));
    return p;
  };
  return { start, dataRoot, ports: [Number(env.PORT), Number(env.EMULATOR_PORT)] };
}

/** `npm start` in a pseudo-terminal, as typed at a shell prompt (`script` is the terminal). */
function inTerminal(command: string): ProductLaunch {
  return { argv: ["script", "-qfec", command, "/dev/null"], stdin: true };
}

/** The product's own database, as its CLI reaches it. */
function productDb(dataRoot: string) {
  return createDb(withDatabase(adminUrlFor(clusterPort({ dataRoot })), "runwarden"), { max: 2 });
}

/** A run submitted and past its first turn: in flight when the test stops the product. Each turn appends its number to `marker`. */
async function runInFlight(dataRoot: string, options: { secondTurnSeconds?: number } = {}) {
  const marker = path.join(dataRoot, `turns-${Date.now()}.txt`);
  const inSecond = `${marker}.second-started`;
  const long = options.secondTurnSeconds ? `if [ "$RUNWARDEN_TURN" = 2 ]; then touch '${inSecond}'; sleep ${options.secondTurnSeconds}; fi; ` : "";
  const db = productDb(dataRoot);
  try {
    const run = await submitRun(
      db,
      INSTANCE,
      { companyId: "co-1", taskId: `t-${path.basename(marker)}`, agent: "a", provider: "codex", turns: TURNS, agentCommand: `${long}sleep 0.4; printf '%s\\n' "$RUNWARDEN_TURN" >> '${marker}'` },
      { id: "test", role: "operator" },
    );
    await waitUntil(async () => (await db.run.findUniqueOrThrow({ where: { id: run.id } })).turnsDone >= 1, 120_000, "the run past its first turn");
    if (options.secondTurnSeconds) await waitUntil(async () => fs.existsSync(inSecond), 60_000, "its long second turn under way");
    return { id: run.id, marker };
  } finally {
    await db.$disconnect();
  }
}

/** The next start on the same data directory finishes the run, every turn exactly once, and stops again. */
async function finishedByNextStart(start: () => ProductProcess, dataRoot: string, run: { id: string; marker: string }): Promise<string> {
  const next = start();
  await next.ready;
  const t0 = Date.now();
  const db = productDb(dataRoot);
  try {
    const ended = ["succeeded", "failed", "cancelled"];
    await waitUntil(async () => ended.includes((await db.run.findUniqueOrThrow({ where: { id: run.id } })).status), 120_000, "the run to end");
    console.info(`the next start ended the run ${((Date.now() - t0) / 1000).toFixed(1)} s after it was ready`);
    const after = await db.run.findUniqueOrThrow({ where: { id: run.id } });
    expect({ status: after.status, code: after.failureCode, turns: after.turnsDone }).toEqual({ status: "succeeded", code: null, turns: TURNS });
  } finally {
    await db.$disconnect();
  }
  expect(fs.readFileSync(run.marker, "utf8").trim().split("\n")).toEqual(Array.from({ length: TURNS }, (_, i) => String(i + 1)));
  next.interrupt();
  expect((await next.exited).code).toBe(0);
  return next.output();
}

async function nothingLeft(p: ProductProcess, dataRoot: string, ports: number[], options: { postgres: boolean }) {
  await waitUntil(async () => partsRunning(dataRoot).length === 0, 60_000, `no part left running (${partsRunning(dataRoot).join(" | ")})`);
  for (const port of ports) expect(await portFree(port), `port ${port}`).toBe(true);
  expect(postgresRunning(dataRoot)).toBe(options.postgres);
  expect(crashLines(p.output())).toEqual([]);
}

describe("npm start stops every part it started", () => {
  it("Ctrl-C typed into its terminal while its output goes through `| tee`: nothing left, its PostgreSQL stopped; the run in flight goes on at the next start", async () => {
    const { start, dataRoot, ports } = await product();
    const log = path.join(dataRoot, "start.log");
    // Ctrl-C ends tee too: every later line of the stopping sequence meets a closed pipe.
    const p = start(inTerminal(`npm start 2>&1 | tee '${log}'`));
    await p.ready;
    const run = await runInFlight(dataRoot);
    const t0 = Date.now();
    p.child.stdin?.write("\x03");
    await nothingLeft(p, dataRoot, ports, { postgres: false });
    console.info(`Ctrl-C in a terminal, through tee: stopped in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    await finishedByNextStart(start, dataRoot, run);
  }, 420_000);

  it("its terminal closed (SIGHUP to the session): the same", async () => {
    const { start, dataRoot, ports } = await product();
    const p = start(inTerminal("npm start"));
    await p.ready;
    const run = await runInFlight(dataRoot);
    const t0 = Date.now();
    // The terminal itself goes away, as a closed window's does: the kernel hangs up its session.
    process.kill(p.child.pid!, "SIGKILL");
    await nothingLeft(p, dataRoot, ports, { postgres: false });
    console.info(`terminal closed: stopped in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    await finishedByNextStart(start, dataRoot, run);
  }, 420_000);

  it("SIGTERM to the npm process only (what systemd, Docker and timeout send): in reverse order, a drain given its time, the same", async () => {
    const { start, dataRoot, ports } = await product();
    const p = start({ argv: ["npm", "start"] });
    await p.ready;
    // Its second turn outlasts the 10 s a part is given by default: a controller is given its drain.
    const run = await runInFlight(dataRoot, { secondTurnSeconds: 12 });
    const t0 = Date.now();
    process.kill(p.child.pid!, "SIGTERM");
    // npm may pass the signal on or exit without doing so (it does the latter); either way the start script stops.
    await nothingLeft(p, dataRoot, ports, { postgres: false });
    console.info(`SIGTERM to npm: stopped in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    const out = p.output();
    expect(out).toMatch(/runwarden: stopping \((SIGTERM|its launcher \(pid \d+\) exited)\)/);
    // Reverse start order, each part done before the next is stopped: the controller drained (its
    // turn in flight finished, its run suspended), then the emulator, the database last.
    const order = ["drained and stopped", "emulator: stopping", "embedded PostgreSQL stopped"].map((mark) => out.indexOf(mark));
    expect(order.every((i) => i >= 0), out.slice(-3000)).toBe(true);
    expect(order).toEqual([...order].sort((a, b) => a - b));
    expect(out).toContain("runwarden: stopped");
    await finishedByNextStart(start, dataRoot, run);
  }, 420_000);

  it("on SIGTERM to the start script alone after its output's reader went away (EPIPE): the same", async () => {
    const { start, dataRoot, ports } = await product();
    const p = start();
    await p.ready;
    // The reader of `npm start | tee log` dies: every later line of the script hits a closed pipe.
    p.child.stdout?.destroy();
    p.child.stderr?.destroy();
    process.kill(p.child.pid!, "SIGTERM");
    const { code, signal } = await p.exited;
    expect({ code, signal }).toEqual({ code: 0, signal: null });
    await nothingLeft(p, dataRoot, ports, { postgres: false });
  }, 300_000);

  it("when the start script is SIGKILLed: each part stops itself; the next start reuses its PostgreSQL and finishes the run in flight", async () => {
    const { start, dataRoot, ports } = await product();
    const first = start();
    await first.ready;
    const run = await runInFlight(dataRoot);
    const t0 = Date.now();
    process.kill(first.child.pid!, "SIGKILL");
    await first.exited;
    // The parts notice their launcher is gone; the database is the data directory's, left for the next start.
    await nothingLeft(first, dataRoot, ports, { postgres: true });
    console.info(`SIGKILL of the start script: every part gone ${((Date.now() - t0) / 1000).toFixed(1)} s later`);
    const next = await finishedByNextStart(start, dataRoot, run);
    expect(next).toContain("embedded PostgreSQL left running by a start that did not stop it: reused, and stopped with this one");
    expect(postgresRunning(dataRoot)).toBe(false);
  }, 420_000);
});
