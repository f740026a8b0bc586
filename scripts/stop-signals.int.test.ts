import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { portFree } from "./lib/processes";
import { crashLines, productCleanup, productEnv, startProduct, waitUntil, type ProductProcess } from "../server/test/product";

/**
 * `npm start` stops every part it started however it is told to stop, and a part never outlives
 * it (scripts/start.ts, scripts/lib/parent-guard.mjs). What is left is read by this
 * installation's own marks — its ports, its data directory in a process's environment, its
 * PostgreSQL's postmaster.pid — never by a process name another installation shares.
 */

const root = path.resolve(import.meta.dirname, "..");
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function product() {
  const dataRoot = fs.mkdtempSync(path.join(os.tmpdir(), "rw-signals-"));
  fs.chmodSync(dataRoot, 0o755);
  cleanups.push(() => fs.rmSync(dataRoot, { recursive: true, force: true }));
  const env = await productEnv({ RUNWARDEN_DATA_DIR: dataRoot });
  const start = () => {
    const p = startProduct(root, env);
    cleanups.push(productCleanup(p, dataRoot));
    return p;
  };
  return { start, dataRoot, ports: [Number(env.PORT), Number(env.EMULATOR_PORT)] };
}

/** This installation's processes but its PostgreSQL's: every process whose environment names its data directory. */
function partsRunning(dataRoot: string): string[] {
  const mark = `RUNWARDEN_DATA_DIR=${dataRoot}`;
  const out: string[] = [];
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      if (!fs.readFileSync(`/proc/${entry}/environ`, "utf8").split("\0").includes(mark)) continue;
      const cmdline = fs.readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0").join(" ");
      if (!/\bpostgres\b/.test(cmdline)) out.push(`${entry} ${cmdline.slice(0, 160)}`);
    } catch {
      // exited meanwhile, or not ours to read
    }
  }
  return out;
}

/** Its embedded PostgreSQL, running (its postmaster.pid names a live process). */
function postgresRunning(dataRoot: string): boolean {
  const link = path.join(dataRoot, "pg");
  if (!fs.existsSync(link)) return false;
  const pidFile = path.join(fs.realpathSync(link), "postmaster.pid");
  if (!fs.existsSync(pidFile)) return false;
  const pid = Number(fs.readFileSync(pidFile, "utf8").split("\n")[0]);
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function nothingLeft(p: ProductProcess, dataRoot: string, ports: number[], options: { postgres: boolean }) {
  await waitUntil(async () => partsRunning(dataRoot).length === 0, 60_000, `no part left running (${partsRunning(dataRoot).join(" | ")})`);
  for (const port of ports) expect(await portFree(port), `port ${port}`).toBe(true);
  expect(postgresRunning(dataRoot)).toBe(options.postgres);
  expect(crashLines(p.output())).toEqual([]);
}

describe("npm start stops every part it started", () => {
  it("on SIGHUP (the terminal closed): in reverse order, its PostgreSQL too, exit 0", async () => {
    const { start, dataRoot, ports } = await product();
    const p = start();
    await p.ready;
    const t0 = Date.now();
    process.kill(-p.child.pid!, "SIGHUP");
    const { code } = await p.exited;
    console.info(`SIGHUP: stopped in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    expect(code).toBe(0);
    expect(p.output()).toContain("runwarden: stopping (SIGHUP)");
    expect(p.output()).toContain("runwarden: stopped");
    await nothingLeft(p, dataRoot, ports, { postgres: false });
  }, 300_000);

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

  it("when the start script is SIGKILLed: each part stops itself; the next start reuses its PostgreSQL and serves", async () => {
    const { start, dataRoot, ports } = await product();
    const first = start();
    await first.ready;
    const t0 = Date.now();
    process.kill(first.child.pid!, "SIGKILL");
    await first.exited;
    // The parts notice their launcher is gone; the database is the data directory's, left for the next start.
    await nothingLeft(first, dataRoot, ports, { postgres: true });
    console.info(`SIGKILL of the start script: every part gone ${((Date.now() - t0) / 1000).toFixed(1)} s later`);

    const second = start();
    await second.ready;
    expect(second.output()).toContain("embedded PostgreSQL left running by a start that did not stop it: reused, and stopped with this one");
    second.interrupt();
    expect((await second.exited).code).toBe(0);
    await nothingLeft(second, dataRoot, ports, { postgres: false });
  }, 420_000);
});
