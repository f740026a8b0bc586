import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { adminUrlFor, clusterPort } from "../server/db/cluster";
import { createDb, type Db } from "../server/db/client";
import { withDatabase } from "../server/db/url";
import { SANDBOX_MARKER } from "../server/emulator/sandbox-host";
import { LIVE_CONTROLLER_WINDOW_SECONDS, readHealth } from "../server/health";
import { submitRun } from "../server/runs/submit";
import { outageEnv, outageLength, probeCapReachedMs, recoveryBudgetMs, type OutageSettings } from "../server/test/outage";
import { crashLines, productCleanup, productEnv, startProduct, waitUntil, type ProductProcess } from "../server/test/product";

/**
 * A crashed controller is restarted, not mourned; an outage is not the run's failure
 * (docs/rules.md §2.8). The whole product under `npm start`, as a user runs it: its controller
 * SIGKILLed mid-run while the provider hangs (SIGSTOP) for a few times every threshold a run
 * could cross meanwhile (below), and a controller that keeps crashing.
 */

const root = path.resolve(import.meta.dirname, "..");
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/**
 * The thresholds, compressed by configuration (`server/test/outage.ts`): 2 recovery attempts with
 * a 100 ms back-off and a 2 s call timeout (the defaults: 5, 2 s, 30 s — ~3 min of hung calls),
 * breaker probes from 100 ms up to a 500 ms cap (the defaults: 1 s up to 30 s). The call timeout
 * stays 2 s: below it a busy machine's slow toolbox call would read as an outage.
 */
const SETTINGS: OutageSettings = { callTimeoutMs: 2_000, maxAttempts: 2, backoffMs: 100, probeMs: 100, probeCapMs: 500 };
/** The silence window (default 20 s): two of the controller's 2 s heartbeats (controller/controller.ts `HEARTBEAT_MS`). */
const SILENCE_WINDOW_MS = 4_000;
/** session.open's bound (default 5 s). */
const SESSION_OPEN_TIMEOUT_MS = 1_500;
/**
 * The stall, from the restarted controller's start: every call, probe and session.open of the
 * restarted controller hangs; it crosses the recovery budget of hung calls (a run without the
 * outage rule ends `native_recovery_attempts_exhausted`), the breaker's probe cap, the silence
 * window (the controller waiting on the provider still heartbeats, so it holds its runs) and
 * the session.open bound, each `CROSSINGS` times over (the largest: the budget, 2 × 2 s + 100 ms;
 * the silence window next).
 */
const STALL_MS = outageLength({
  recoveryBudget: recoveryBudgetMs(SETTINGS, SETTINGS.callTimeoutMs),
  probeCap: probeCapReachedMs(SETTINGS),
  silenceWindow: SILENCE_WINDOW_MS,
  sessionOpenTimeout: SESSION_OPEN_TIMEOUT_MS,
});
/**
 * The dashboard counts a controller live for a fixed window after its heartbeat
 * (server/health.ts): the killed controller must have aged out of it when `live` is read.
 */
if (STALL_MS <= LIVE_CONTROLLER_WINDOW_SECONDS * 1000) throw new Error(`a stall of ${STALL_MS} ms does not outlast the dashboard's live window`);

async function product(extra: Record<string, string>) {
  const dataRoot = fs.mkdtempSync(path.join(os.tmpdir(), "rw-supervise-"));
  fs.chmodSync(dataRoot, 0o755);
  cleanups.push(() => fs.rmSync(dataRoot, { recursive: true, force: true }));
  const env = await productEnv({ RUNWARDEN_DATA_DIR: dataRoot, RUNWARDEN_INSTANCE_ID: "inst-sup", RUNWARDEN_RESTART_BACKOFF_MS: "300", ...extra });
  const p = startProduct(root, env);
  cleanups.push(productCleanup(p, dataRoot));
  await p.ready;
  const db = createDb(withDatabase(adminUrlFor(clusterPort({ dataRoot })), "runwarden"), { max: 2 });
  cleanups.push(() => db.$disconnect());
  return { p, db, dataRoot, port: Number(env.PORT) };
}

/** The live controller's row (the newest not stopped). */
async function liveController(db: Db) {
  return db.controllerProcess.findFirst({ where: { instanceId: "inst-sup", stoppedAt: null }, orderBy: { bootedAt: "desc" } });
}

/** The dashboard asked every 250 ms until stopped: how many answers were not a page. */
function watchDashboard(port: number) {
  let asked = 0;
  const failures: string[] = [];
  let stopped = false;
  const done = (async () => {
    while (!stopped) {
      asked += 1;
      try {
        const res = await fetch(`http://127.0.0.1:${port}/sign-in`, { signal: AbortSignal.timeout(5_000) });
        if (res.status !== 200) failures.push(`HTTP ${res.status}`);
        await res.arrayBuffer();
      } catch (err) {
        failures.push(String(err));
      }
      await new Promise((r) => setTimeout(r, 250));
    }
  })();
  return {
    async stop() {
      stopped = true;
      await done;
      return { asked, failures };
    },
  };
}

/** GET /api/health without a session: its status and JSON body. */
async function readiness(port: number): Promise<{ status: number; body: unknown }> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/api/health`, { signal: AbortSignal.timeout(5_000), redirect: "manual" });
    return { status: res.status, body: await res.json() };
  } catch (err) {
    return { status: 0, body: String(err) };
  }
}

function emulatorGroup(p: ProductProcess): number {
  const found = p.services().find((s) => s.cmdline.includes("scripts/emulator.ts"));
  if (!found) throw new Error(`no emulator among npm start's services: ${JSON.stringify(p.services())}`);
  return found.pid;
}

describe("npm start supervises its controller (docs/rules.md §2.8)", () => {
  it(`the controller SIGKILLed mid-run while the provider hangs ${STALL_MS / 1000} s past its restart: the dashboard answers throughout, a controller is back by itself, no run fails or needs Retry, every turn runs once`, async () => {
    const { p, db, dataRoot, port } = await product({
      RUNWARDEN_TURN_MS: "100",
      ...outageEnv(SETTINGS),
      RUNWARDEN_EXECUTOR_TIMEOUT_MS: String(SILENCE_WINDOW_MS),
      RUNWARDEN_SESSION_OPEN_TIMEOUT_MS: String(SESSION_OPEN_TIMEOUT_MS),
    });
    const runs = [];
    for (const i of [0, 1]) {
      const marker = path.join(dataRoot, `marker-${i}.txt`);
      const run = await submitRun(
        db,
        "inst-sup",
        { companyId: "co-1", taskId: `sup-${i}`, agent: "a", provider: "codex", turns: 4, agentCommand: `sleep 0.5; printf '%s\\n' "$RUNWARDEN_TURN" >> '${marker}'` },
        { id: "test", role: "operator" },
      );
      runs.push({ id: run.id, marker });
    }
    const ids = runs.map((r) => r.id);
    await waitUntil(async () => (await db.run.count({ where: { id: { in: ids }, turnsDone: { gte: 1 } } })) === 2, 120_000, "both runs past their first turn");

    const dashboard = watchDashboard(port);
    const killed = (await liveController(db))!;
    const emulator = emulatorGroup(p);
    process.kill(-emulator, "SIGSTOP");
    let stalled = true;
    cleanups.push(() => {
      if (stalled) process.kill(-emulator, "SIGCONT");
    });
    process.kill(killed.pid, "SIGKILL");

    // Back by itself, while the provider is still away.
    await waitUntil(async () => ((await liveController(db))?.bootId ?? killed.bootId) !== killed.bootId, 30_000, "a new controller");
    expect(p.output()).toMatch(/controller exited \(SIGKILL\) after [\d.]+ s: restarting it in 0\.3 s \(restart 1\)/);
    // The stall counts from the restarted controller: the thresholds it crosses are that controller's.
    const restarted = Date.now();
    while (Date.now() - restarted < STALL_MS) {
      expect(await db.run.findMany({ where: { id: { in: ids }, status: "failed" }, select: { failureCode: true, failureDetail: true } })).toEqual([]);
      await new Promise((r) => setTimeout(r, 500));
    }
    const health = await readHealth(db, { all: true }, "inst-sup");
    expect(health.controllers.live).toBe(1);
    expect(health.providerOutage).not.toBeNull();
    process.kill(-emulator, "SIGCONT");
    stalled = false;

    await waitUntil(async () => (await db.run.count({ where: { id: { in: ids }, status: { in: ["succeeded", "failed"] } } })) === 2, 120_000, "both runs settled");
    const rows = await db.run.findMany({ where: { id: { in: ids } } });
    expect(rows.map((r) => ({ status: r.status, code: r.failureCode, turns: r.turnsDone, attempts: r.recoveryAttempts }))).toEqual(
      ids.map(() => ({ status: "succeeded", code: null, turns: 4, attempts: 0 })),
    );
    for (const r of runs) expect(fs.readFileSync(r.marker, "utf8").trim().split("\n")).toEqual(["1", "2", "3", "4"]);
    expect(await db.run.count({ where: { previousRunId: { in: ids } } })).toBe(0);
    const seen = await dashboard.stop();
    expect(seen.asked).toBeGreaterThan(STALL_MS / 1000);
    expect(seen.failures).toEqual([]);

    p.interrupt();
    expect((await p.exited).code).toBe(0);
    expect(crashLines(p.output())).toEqual([]);
  }, 420_000);

  it("a controller that keeps crashing is given up loudly; the dashboard keeps serving and says no controller runs", async () => {
    const { p, db, port } = await product({ RUNWARDEN_RESTART_MAX_CRASHES: "2" });
    // Every part up: GET /api/health, as a process manager asks it (no session), says so.
    await waitUntil(async () => (await readiness(port)).status === 200, 30_000, "/api/health 200");
    expect(await readiness(port)).toEqual({ status: 200, body: { status: "ok", down: [], parts: { database: "up", controller: "up", emulator: "up" } } });
    const dashboard = watchDashboard(port);
    // A SIGKILLed controller's row stays unstopped (it had no chance to say so): each start is a newer row.
    const killed = new Set<string>();
    for (let crash = 1; crash <= 3; crash++) {
      let live: Awaited<ReturnType<typeof liveController>> = null;
      await waitUntil(async () => {
        live = await liveController(db);
        return !!live && !killed.has(live.bootId);
      }, 30_000, `controller start ${crash}`);
      killed.add(live!.bootId);
      process.kill(live!.pid, "SIGKILL");
    }
    await waitUntil(async () => /not restarting it again/.test(p.output()), 10_000, "the supervisor to give up");
    expect(p.output()).toMatch(/controller exited \(SIGKILL\) 3 times in a row, each within 60 s of its start: not restarting it again/);
    // Nothing restarts it now, and once its heartbeats are older than the window the dashboard says so.
    await waitUntil(async () => (await readHealth(db, { all: true }, "inst-sup")).controllers.live === 0, 30_000, "no controller counted as running");
    const newest = await liveController(db);
    expect(killed.has(newest!.bootId)).toBe(true);
    const health = await readHealth(db, { all: true }, "inst-sup");
    expect(health.controllers).toMatchObject({ live: 0, noneSince: expect.any(Date) });
    // And /api/health tells a process manager which part is down.
    expect(await readiness(port)).toEqual({ status: 503, body: { status: "down", down: ["controller"], parts: { database: "up", controller: "down", emulator: "up" } } });
    const seen = await dashboard.stop();
    expect(seen.failures).toEqual([]);
    expect(p.child.exitCode).toBeNull();
    p.interrupt();
    expect((await p.exited).code).toBe(0);
  }, 240_000);

  it("after Ctrl-C, the sandboxes' processes end at their auto-stop, as Daytona's would, though the emulator is down", async () => {
    // One auto-stop minute is 200 ms here: Daytona's 15 minutes idle are 3 s.
    const { p, db, dataRoot } = await product({ EMULATOR_AUTO_STOP_MINUTE_MS: "200", RUNWARDEN_TURN_MS: "100" });
    const run = await submitRun(db, "inst-sup", { companyId: "co-1", taskId: "sup-ctrlc", agent: "a", provider: "codex", turns: 50, agentCommand: "sleep 0.2" }, { id: "test", role: "operator" });
    await waitUntil(async () => (await db.run.findUniqueOrThrow({ where: { id: run.id } })).turnsDone >= 2, 120_000, "two turns");
    await db.$disconnect();
    expect(sandboxProcesses(dataRoot).length).toBeGreaterThan(0);
    p.interrupt();
    expect((await p.exited).code).toBe(0);
    expect(p.output()).toMatch(/1 sandbox\(es\) will auto-stop while the emulator is down/);
    // Ctrl-C suspends the run: its runner is still there, until its sandbox's auto-stop.
    expect(sandboxProcesses(dataRoot).length).toBeGreaterThan(0);
    await waitUntil(async () => sandboxProcesses(dataRoot).length === 0, 20_000, "the sandbox's processes ended by its auto-stop");
    // And the reaper itself is gone once its last deadline passed.
    await waitUntil(async () => sandboxProcesses(dataRoot, true).length === 0, 10_000, "the reaper gone");
  }, 240_000);
});

/** Processes of the emulator's sandboxes under `dir` (by their marker); with `reaper`, the auto-stop reaper's too. */
function sandboxProcesses(dir: string, reaper = false): number[] {
  const prefix = `${SANDBOX_MARKER}=${path.resolve(dir)}`;
  const out: number[] = [];
  for (const e of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const marker = fs.readFileSync(`/proc/${e}/environ`, "utf8").split("\0").find((v) => v.startsWith(prefix));
      if (marker && (reaper || !marker.endsWith("autostop-reaper"))) out.push(Number(e));
    } catch {
      // gone, or not ours to read
    }
  }
  return out;
}

