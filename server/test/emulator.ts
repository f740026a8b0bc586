import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { withDatabase } from "../db/url";
import { withAdmin } from "./db";
import { DaytonaProvider } from "../providers/daytona";
import { runnerClientFor } from "../providers/from-env";
import type { RunnerClient, TurnPoll } from "../providers/runner";
import { EmulatorAdminClient } from "../emulator/admin-client";
import { DEFAULT_API_KEY, startEmulator, type EmulatorHandle, type EmulatorOptions } from "../emulator/server";

/**
 * Test support: a throwaway database named with the test run's prefix (so the global
 * teardown drops it even when a test dies), and an in-process emulator on port 0 with the
 * provider, runner and admin clients pointed at it.
 */

export interface ThrowawayDatabase {
  name: string;
  url: string;
  drop(): Promise<void>;
}

export async function createThrowawayDatabase(adminUrl: string, prefix: string, tag = "emu"): Promise<ThrowawayDatabase> {
  const name = `${prefix}_${tag}_${crypto.randomBytes(4).toString("hex")}`;
  await withAdmin(adminUrl, (c) => c.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`));
  return {
    name,
    url: withDatabase(adminUrl, name),
    drop: () => withAdmin(adminUrl, (c) => c.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`)).then(() => {}),
  };
}

export interface TestEmulator {
  emulator: EmulatorHandle;
  database: ThrowawayDatabase;
  admin: EmulatorAdminClient;
  /** A provider scoped to `instanceId` (unscoped when omitted). */
  provider(options?: { instanceId?: string; timeoutMs?: number; pageSize?: number }): DaytonaProvider;
  runner(provider: DaytonaProvider, timeoutMs?: number, turnPoll?: Partial<TurnPoll>): RunnerClient;
  close(): Promise<void>;
}

export async function startTestEmulator(
  adminUrl: string,
  prefix: string,
  options: Partial<Omit<EmulatorOptions, "databaseUrl" | "port">> = {},
): Promise<TestEmulator> {
  const database = await createThrowawayDatabase(adminUrl, prefix);
  const dataDir = options.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), "rw-emu-test-"));
  const emulator = await startEmulator({ port: 0, databaseUrl: database.url, ...options, dataDir });
  const apiKey = options.apiKeys?.[0] ?? DEFAULT_API_KEY;
  return {
    emulator,
    database,
    admin: new EmulatorAdminClient(emulator.url, apiKey),
    provider: (o = {}) => new DaytonaProvider({ apiUrl: emulator.url, apiKey, timeoutMs: o.timeoutMs ?? 10_000, instanceId: o.instanceId, pageSize: o.pageSize }),
    runner: (provider, timeoutMs = 10_000, turnPoll) =>
      runnerClientFor(provider, { apiKey, timeoutMs, turnPoll }),
    async close() {
      // The sandboxes' processes (detached runners) end with the test.
      await emulator.killAllProcesses().catch(() => 0);
      await emulator.close();
      await database.drop();
      if (!options.dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
