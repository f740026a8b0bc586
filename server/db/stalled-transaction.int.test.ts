import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { idleInTransactionTimeoutMs } from "../controller/main";
import { createTestDatabase, type TestDatabase } from "../test/db";

/**
 * A controller stalled inside a transaction (SIGSTOP, a paused VM) holds its row locks; a
 * takeover's write on that run waits on them. The controller's connections carry an
 * idle-in-transaction timeout, so PostgreSQL ends the stalled session and the lock with it:
 * K5 on seed 3203 found a takeover that waited 39 s, until the stalled one was woken.
 */

let database: TestDatabase;
const stopped: number[] = [];

beforeAll(async () => {
  database = await createTestDatabase(inject("adminUrl"), inject("templateDatabase"), inject("runPrefix"));
  await database.db.$executeRaw`INSERT INTO instances (id, name) VALUES ('inst-stall', 'free') ON CONFLICT (id) DO NOTHING`;
});

afterAll(async () => {
  for (const pid of stopped) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // gone already
    }
  }
  await database?.drop();
});

/** A child that holds the instance row's lock in a transaction, SIGSTOPped once it does. */
async function stalledHolder(idleMs: number): Promise<ChildProcess> {
  const root = path.resolve(__dirname, "../..");
  const child = spawn(process.execPath, [path.join(root, "node_modules/tsx/dist/cli.mjs"), "server/test/stalled-transaction-child.ts", database.url, "inst-stall", String(idleMs)], {
    cwd: root,
    stdio: ["ignore", "pipe", "inherit"],
  });
  await new Promise<void>((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      if (out.includes("locked\n")) resolve();
    });
    child.once("exit", (code) => reject(new Error(`the holder exited (${code}) before it held the lock: ${out}`)));
  });
  // tsx runs the script in a child of its own: both are stopped (and killed at the end).
  for (const pid of [child.pid!, ...childPids(child.pid!)]) {
    stopped.push(pid);
    process.kill(pid, "SIGSTOP");
  }
  return child;
}

function childPids(pid: number): number[] {
  try {
    return fs
      .readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8")
      .trim()
      .split(/\s+/)
      .filter((s) => s !== "")
      .map(Number);
  } catch {
    return [];
  }
}

/** The taker's write on the locked row, given up after `waitMs` (lock_timeout). Resolves with the time it took or the error. */
async function takerWrite(waitMs: number): Promise<{ ms: number; error: string | null }> {
  const started = Date.now();
  try {
    await database.db.$transaction(async (tx) => {
      await tx.$executeRawUnsafe(`SET LOCAL lock_timeout = ${waitMs}`);
      await tx.$executeRaw`UPDATE instances SET name = 'taker' WHERE id = 'inst-stall'`;
    });
    return { ms: Date.now() - started, error: null };
  } catch (err) {
    return { ms: Date.now() - started, error: err instanceof Error ? err.message : String(err) };
  }
}

describe("a controller stalled inside a transaction", () => {
  it("loses its session after the idle-in-transaction timeout, and the takeover's write on the row it locked goes through", async () => {
    await stalledHolder(1_000);
    const write = await takerWrite(8_000);
    expect(write.error).toBeNull();
    expect(write.ms).toBeLessThan(6_000);
    const row = await database.db.$queryRaw<Array<{ name: string }>>`SELECT name FROM instances WHERE id = 'inst-stall'`;
    expect(row[0]?.name).toBe("taker");
  });

  it("without the timeout, the stalled holder keeps the lock for as long as it is stopped (what the timeout fixes)", async () => {
    await stalledHolder(0);
    const write = await takerWrite(3_000);
    expect(write.error).toMatch(/lock timeout/i);
  });

  it("the controller's timeout is twice its silence window, at least 10 s", () => {
    expect(idleInTransactionTimeoutMs(500)).toBe(10_000);
    expect(idleInTransactionTimeoutMs(20_000)).toBe(40_000);
  });
});
