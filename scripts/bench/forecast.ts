/**
 * `npm run bench -- --forecast [sizes] [--forecast-lanes N]`: the time of a restart forecast
 * (docs/rules.md §2.12) of N live runs with real sandboxes in the emulator (its own process, as
 * `npm start` runs it), next to the floor measured in the same run — the provider's own
 * `files/download` round trip × runs / lanes — so the growth shows.
 *
 * Each run is warm, past session.open, with an active lease on a sandbox of its own whose
 * runner-state.json is on the sandbox's disk. Half name a runner process that is alive (this
 * bench's own: the forecast's `/proc` look finds it → reattach), half one that exited (→
 * resume). No runnerd process runs: 1,000 of them would not fit beside the bench, and the
 * forecast's reads (get, files/download, a `cat /proc/PID/stat` through process/execute, one
 * database read) cost the same either way.
 */
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import pino from "pino";
import { controllerConfig } from "../../server/controller/config";
import type { ControllerContext } from "../../server/controller/context";
import { takeForecast } from "../../server/controller/forecast";
import { createDb, type Db } from "../../server/db/client";
import { migrate } from "../../server/db/migrate";
import { DEFAULT_TRANSITION_MS } from "../../server/emulator/context";
import { EmulatorAdminClient } from "../../server/emulator/admin-client";
import { sandboxHost } from "../../server/emulator/sandbox-host";
import { env } from "../../server/env";
import { exitedProcessIdentity } from "../../server/process/exited";
import { currentProcessIdentity } from "../../server/process/identity";
import { DaytonaProvider } from "../../server/providers/daytona";
import { runnerClientFor } from "../../server/providers/from-env";
import { buildLabels, creationName } from "../../server/providers/labels";
import { RUNNER_STATE_PATH, runnerProgramDigest } from "../../server/providers/runner";
import { throwawayDatabases } from "../lib/throwaway-databases";
import { emulatorProcess } from "./emulator";

const INSTANCE = "inst-forecast";
const COMPANY = "co-1";
const say = (line: string) => process.stdout.write(`${line}\n`);

export async function runForecastBench(o: { sizes: number[]; lanes: number }): Promise<void> {
  const dbs = await throwawayDatabases("rwbench_fc");
  const database = (tag: string) => dbs.create(tag);
  const appUrl = await database("app");
  await migrate(appUrl);
  const emulator = await emulatorProcess(await database("emu"), DEFAULT_TRANSITION_MS);
  const db = createDb(appUrl, { max: o.lanes + 4 });
  try {
    const n = Math.max(...o.sizes);
    const t0 = performance.now();
    const sandboxes = await liveRuns(db, emulator, n);
    say(`forecast bench: ${n} live runs on ${n} emulator sandboxes set up in ${((performance.now() - t0) / 1000).toFixed(1)} s; lanes ${o.lanes}`);

    // The floor: the provider's own round trips, caches warm, one at a time.
    const probe = context(db, emulator.url);
    const sample = sandboxes.slice(0, Math.min(50, sandboxes.length));
    const download = await roundTrips(sample, (id) => probe.provider.readFile(id, RUNNER_STATE_PATH));
    const get = await roundTrips(sample, (id) => probe.provider.getById(id));
    const peek = await roundTrips(sample, (id) => probe.runner.peekProcess(id, process.pid));
    say(`round trips (median of ${sample.length}, ms): files/download ${download.toFixed(1)}, get ${get.toFixed(1)}, process/execute cat ${peek.toFixed(1)}`);

    for (const size of o.sizes) {
      // A fresh context each time, as each `runwarden forecast` is a process of its own (cold caches).
      const ids = sandboxes.slice(0, size).map((s) => s.runId);
      const f = await takeForecast(context(db, emulator.url), { all: true }, { runIds: ids, lanes: o.lanes });
      const floor = (download * size) / o.lanes;
      const allReads = ((download + get + peek) * size) / o.lanes;
      const paths = Object.entries(f.runs.reduce<Record<string, number>>((acc, r) => ({ ...acc, [`${r.prediction}:${r.path ?? r.code}`]: (acc[`${r.prediction}:${r.path ?? r.code}`] ?? 0) + 1 }), {}))
        .map(([k, v]) => `${k} ${v}`)
        .join(", ");
      say(
        `forecast of ${String(size).padStart(5)} live runs: ${String(f.durationMs).padStart(6)} ms (${(f.durationMs / size).toFixed(1)} ms/run)` +
          `  floor (files/download × runs / lanes) ${floor.toFixed(0)} ms, every read's round trip × runs / lanes ${allReads.toFixed(0)} ms  [${paths}]`,
      );
      if (f.runs.length !== size) throw new Error(`the forecast covered ${f.runs.length} of ${size} runs`);
    }
  } finally {
    await db.$disconnect();
    await emulator.close();
    await dbs.dropAll();
    if (dbs.server.startedHere) await dbs.server.stop().catch(() => {});
  }
}

function context(db: Db, url: string): ControllerContext {
  const provider = new DaytonaProvider({ apiUrl: url, apiKey: "emulator-key", instanceId: INSTANCE });
  return {
    db,
    provider,
    providerTarget: "emulator",
    runner: runnerClientFor(provider, { apiKey: "emulator-key" }),
    identity: currentProcessIdentity(),
    config: controllerConfig(env, { instanceId: INSTANCE }),
    log: pino({ level: "silent" }),
    drain: new AbortController(),
  };
}

async function roundTrips(sandboxes: Array<{ sandboxId: string }>, call: (id: string) => Promise<unknown>): Promise<number> {
  for (const s of sandboxes.slice(0, 3)) await call(s.sandboxId);
  const xs: number[] = [];
  for (const s of sandboxes) {
    const t = performance.now();
    await call(s.sandboxId);
    xs.push(performance.now() - t);
  }
  xs.sort((a, b) => a - b);
  return xs[Math.floor(xs.length / 2)]!;
}

/** `n` warm runs past session.open, each with a planted sandbox, an active lease and its runner state on the sandbox's disk. */
async function liveRuns(db: Db, emulator: { url: string; hostDir: string }, n: number): Promise<Array<{ runId: string; sandboxId: string }>> {
  await db.instance.upsert({ where: { id: INSTANCE }, create: { id: INSTANCE, name: "forecast bench" }, update: {} });
  const admin = new EmulatorAdminClient(emulator.url, "emulator-key");
  const alive = currentProcessIdentity();
  const dead = await exitedProcessIdentity();
  const digest = runnerProgramDigest();
  const out: Array<{ runId: string; sandboxId: string }> = new Array(n);
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < n) {
        const i = next++;
        const runId = crypto.randomUUID();
        const sandbox = await admin.plant({ name: creationName("rw", runId), labels: buildLabels({ instanceId: INSTANCE, companyId: COMPANY, runId }) });
        const host = sandboxHost(emulator.hostDir, sandbox.id);
        const work = path.join(host.home, "work");
        const owner = i % 2 === 0 ? alive : dead;
        const state = {
          runId,
          runnerInstanceId: `ri-${i}`,
          sessionId: `s-${i}`,
          lifecycle: "ready",
          lastConnectionProtocolVersion: 1,
          lastControllerCommandSeq: 1,
          reconnectCount: 0,
          outbox: [],
          processedCommands: [{ seq: 1, kind: "turn", processedAt: new Date().toISOString(), exitCode: 0 }],
          pendingTerminalDelivery: null,
          providerStatePresent: true,
          process: { pid: owner.pid, startedAt: owner.startedAt, startTicks: owner.startTicks },
          inFlight: null,
          workDir: work,
          programDigest: digest,
          updatedAt: new Date().toISOString(),
        };
        fs.mkdirSync(path.join(host.home, path.dirname(RUNNER_STATE_PATH)), { recursive: true });
        fs.mkdirSync(work, { recursive: true });
        fs.writeFileSync(path.join(host.home, RUNNER_STATE_PATH), JSON.stringify(state));
        out[i] = { runId, sandboxId: sandbox.id };
      }
    }),
  );
  await db.run.createMany({
    data: out.map(({ runId, sandboxId }, i) => ({
      id: runId,
      instanceId: INSTANCE,
      companyId: COMPANY,
      taskId: `fc-bench-${i}`,
      agent: "a",
      provider: "codex",
      target: "remote" as const,
      sandboxMode: "warm" as const,
      status: "running" as const,
      phase: "session_open",
      turnsDone: 1,
      runnerInstanceId: `ri-${i}`,
      sessionId: `s-${i}`,
      executorEpoch: 1,
      checkpoint: { turn: 1, providerLeaseId: sandboxId, remoteCwd: path.join(sandboxHost(emulator.hostDir, sandboxId).home, "work") },
    })),
  });
  await db.environmentLease.createMany({
    data: out.map(({ runId, sandboxId }) => ({ runId, instanceId: INSTANCE, companyId: COMPANY, provider: "emulator", providerLeaseId: sandboxId, sandboxName: creationName("rw", runId), acquisitionOutcome: "created" as const, status: "active" as const })),
  });
  return out;
}
