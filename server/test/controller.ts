import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import pino from "pino";
import { inject } from "vitest";
import type { Db } from "../db/client";
import { createTestDatabase, type TestDatabase } from "./db";
import { startTestEmulator, type TestEmulator } from "./emulator";
import type { ProcessIdentity } from "../process/identity";
import { currentProcessIdentity } from "../process/identity";
import type { RunnerClient } from "../providers/runner";
import { controllerConfig, type ControllerConfig } from "../controller/config";
import { Controller } from "../controller/controller";
import type { ControllerContext } from "../controller/context";
import { readEnv } from "../env";

/**
 * Test support for the controller: a throwaway database, an in-process emulator, and
 * controllers wired to both with fast timings. Real controller processes are in controller-process.ts.
 */
export interface ControllerHarness {
  db: TestDatabase;
  emu: TestEmulator;
  home: string;
  /**
   * A controller on the harness's database. `wrapRunner` and `wrapDb` put a wrapper in front
   * of its runner client or its database client (a lost reply, a stall at an exact step); the
   * controller's own records (its process row) are written through the wrapper too.
   */
  controller(
    overrides?: Partial<ControllerConfig> & { identity?: ProcessIdentity; wrapRunner?: (runner: RunnerClient) => RunnerClient; wrapDb?: (db: Db) => Db },
  ): Promise<Controller>;
  /** A controller context that is not a running controller: what the dashboard gets as `ctx.service()`. */
  service(): ControllerContext;
  close(): Promise<void>;
}

export const FAST: Partial<ControllerConfig> = {
  pollMs: 50,
  sweepIntervalMs: 60_000,
  retryDelayMs: 200,
  turnMs: 20,
  sessionOpenTimeoutMs: 1_500,
  createTimeoutMs: 5_000,
  settleMs: 8_000,
  intentWaitMs: 30 * 60_000,
  executorTimeoutMs: 60_000,
};

export async function startControllerHarness(instanceId = "inst-a"): Promise<ControllerHarness> {
  const adminUrl = inject("adminUrl");
  const prefix = inject("runPrefix");
  const db = await createTestDatabase(adminUrl, inject("templateDatabase"), prefix);
  const emu = await startTestEmulator(adminUrl, prefix);
  const home = fs.mkdtempSync(path.join(os.tmpdir(), "rw-home-"));
  const controllers: Controller[] = [];
  const base = controllerConfig(readEnv({}), { instanceId, home, ...FAST });
  return {
    db,
    emu,
    home,
    async controller(overrides = {}) {
      const { identity, wrapRunner, wrapDb, ...config } = overrides;
      const provider = emu.provider({ instanceId });
      const runner = emu.runner(provider, 5_000);
      const c = new Controller({
        db: wrapDb ? wrapDb(db.db) : db.db,
        provider,
        providerTarget: "emulator",
        runner: wrapRunner ? wrapRunner(runner) : runner,
        identity: identity ?? { ...currentProcessIdentity(), bootId: crypto.randomUUID() },
        config: { ...base, ...config },
        log: pino({ level: "silent" }),
      });
      await c.boot();
      controllers.push(c);
      return c;
    },
    service() {
      const provider = emu.provider({ instanceId });
      return {
        db: db.db,
        provider,
        providerTarget: "emulator",
        runner: emu.runner(provider),
        identity: currentProcessIdentity(),
        config: base,
        log: pino({ level: "silent" }),
        drain: new AbortController(),
      };
    },
    async close() {
      for (const c of controllers) await c.stop("test_end");
      await emu.close();
      await db.drop();
      fs.rmSync(home, { recursive: true, force: true });
    },
  };
}

/** Polls until `check` returns a value, or fails with the last state described. */
export async function waitFor<T>(what: string, check: () => Promise<T | null | undefined | false>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
