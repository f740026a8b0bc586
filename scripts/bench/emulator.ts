/**
 * The emulator the benches talk to, and the reclaim figures' shared pieces: sandboxes planted
 * for abandoned intents, and the floor — the provider's own round trips for a reclaim.
 */
import { spawn } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { TransitionMs } from "../../server/emulator/context";
import { EmulatorAdminClient } from "../../server/emulator/admin-client";
import { freePort, killSandboxProcesses, sandboxHost } from "../../server/emulator/sandbox-host";
import { EmulatorStore } from "../../server/emulator/store";
import { childEnv, env } from "../../server/env";
import pino from "pino";
import { controllerConfig } from "../../server/controller/config";
import { Controller } from "../../server/controller/controller";
import { json } from "../../server/controller/records";
import type { Db } from "../../server/db/client";
import type { Identity } from "../../server/engine";
import { DaytonaProvider } from "../../server/providers/daytona";
import { runnerClientFor } from "../../server/providers/from-env";
import { currentProcessIdentity } from "../../server/process/identity";
import { buildLabels, creationName } from "../../server/providers/labels";
import { stopService, tsxArgs, waitForHttp } from "../lib/processes";

/**
 * The emulator as `npm start` runs it: `scripts/emulator.ts` in a process of its own (in
 * the bench's process it shared one event loop with the sweep it answered). The floor and
 * the sweep both talk to this one emulator.
 */
export async function emulatorProcess(databaseUrl: string, transitions: TransitionMs) {
  const port = await freePort();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "rw-bench-emu-"));
  const emuDatabase = new URL(databaseUrl).pathname.slice(1);
  // Its stdout (start-up lines) is left out of the figures; its errors are shown.
  const child = spawn(process.execPath, tsxArgs("scripts/emulator.ts"), {
    env: childEnv({ DATABASE_URL: databaseUrl, EMULATOR_DATABASE: emuDatabase, EMULATOR_PORT: String(port), EMULATOR_URL: undefined, EMULATOR_API_KEY: "emulator-key", RUNWARDEN_DATA_DIR: dataDir, RUNWARDEN_PG_PORT: undefined }),
    detached: true,
    stdio: ["ignore", "ignore", "inherit"],
  });
  const service = { name: "emulator", child, exited: new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => child.once("exit", (code, signal) => r({ code, signal }))) };
  const url = `http://127.0.0.1:${port}`;
  if (!(await waitForHttp(`${url}/health`, 60_000, () => child.exitCode !== null))) throw new Error("the emulator process did not answer within 60 s");
  // The same transitions as the in-process emulator's defaults (npm start's are 150 ms each).
  await new EmulatorAdminClient(url, "emulator-key").configure({ transitionMs: transitions });
  // What the in-process handle offered the bench: its sandboxes' processes (section 1's runners) are killed at the end.
  const store = new EmulatorStore(databaseUrl, { destroyedRetentionMs: 0 });
  const hostDir = path.join(dataDir, "emulator", emuDatabase);
  return {
    url,
    /** Where its sandboxes' directories are (`sandboxHost(hostDir, id)`): the forecast bench writes runner states there. */
    hostDir,
    async killAllProcesses() {
      let n = 0;
      for (const r of await store.all(true)) n += await killSandboxProcesses(sandboxHost(hostDir, r.id));
      return n;
    },
    async close() {
      await stopService(service);
      await store.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** `n` sandboxes of this instance and company, each under the exact creation name of an intent id (8 plants at a time). */
export async function plantAbandoned(admin: EmulatorAdminClient, n: number, instanceId: string, companyId: string): Promise<Array<{ id: string; name: string }>> {
  const out: Array<{ id: string; name: string }> = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < n) {
        next++;
        const id = crypto.randomUUID();
        const name = creationName("rw", id);
        await admin.plant({ name, labels: buildLabels({ instanceId, companyId, operationId: id }) });
        out.push({ id, name });
      }
    }),
  );
  return out;
}

/**
 * `n` creation intents abandoned by an exited `creator`, each with its sandbox planted: due
 * for a reclaim at the next sweep (the creator's exit makes them due before their deadline).
 */
export async function abandonIntents(db: Db, admin: EmulatorAdminClient, n: number, instanceId: string, companyId: string, creator: Identity): Promise<void> {
  const planted = await plantAbandoned(admin, n, instanceId, companyId);
  await db.sandboxCreationIntent.createMany({
    data: planted.map(({ id, name }) => ({
      id,
      instanceId,
      companyId,
      runId: `probe-${id}`,
      creationName: name,
      labels: json({}),
      creator: json(creator),
      settleDeadline: new Date(Date.now() + 60_000),
      nextAttemptAt: new Date(Date.now() + 30 * 60_000),
    })),
  });
}

/**
 * Sandboxes/s of the provider's own round trips for what a reclaim asks of it (get by name,
 * destroy: the teardown acts on the sandbox the reclaim found), `lanes` at a time as the
 * sweep's lanes: on `n` freshly planted ones.
 */
export async function reclaimFloor(admin: EmulatorAdminClient, provider: DaytonaProvider, o: { n: number; lanes: number; instanceId: string; companyId: string }): Promise<number> {
  const set = await plantAbandoned(admin, o.n, o.instanceId, o.companyId);
  const t = performance.now();
  let cursor = 0;
  await Promise.all(
    Array.from({ length: o.lanes }, async () => {
      while (cursor < set.length) {
        const one = set[cursor++]!;
        const found = await provider.getByName(one.name);
        if (!found) throw new Error(`planted ${one.name} not found`);
        await provider.destroy(found.id);
      }
    }),
  );
  return o.n / ((performance.now() - t) / 1000);
}

/** An in-process controller of `instanceId` (booted, never started: the bench calls its sweeps) against this emulator. */
export async function benchController(db: Db, emulatorUrl: string, instanceId: string) {
  const identity = { ...currentProcessIdentity(), bootId: crypto.randomUUID() };
  const provider = new DaytonaProvider({ apiUrl: emulatorUrl, apiKey: "emulator-key", instanceId });
  const controller = new Controller({
    db,
    provider,
    providerTarget: "emulator",
    runner: runnerClientFor(provider, { apiKey: "emulator-key" }),
    identity,
    config: controllerConfig(env, { instanceId, home: fs.mkdtempSync(path.join(os.tmpdir(), "rw-bench-")) }),
    log: pino({ level: "silent" }),
  });
  await controller.boot();
  return { controller, provider, identity };
}
