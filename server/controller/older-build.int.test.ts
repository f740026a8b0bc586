import fs from "node:fs";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { submitRun } from "../runs/submit";
import { exitedProcessIdentity } from "../process/exited";
import { buildLabels, creationName } from "../providers/labels";
import { evidenceIdentity } from "./context";
import { json } from "./records";
import { spawnController, type ControllerProcessHandle } from "../test/controller-process";
import { startControllerHarness, waitFor, type ControllerHarness } from "../test/controller";
import { checkoutOlderBuild, type OlderBuild } from "../test/older-build";
import { tempDirs } from "../test/temp";

/**
 * The build before this one keeps working against this one's schema (docs/operations.md,
 * "Upgrades and migrations": every migration is an expand step an older controller survives).
 * Not a mock of it: the previous build's own source, exported from this clone's history
 * (server/test/older-build.ts), started as its controller — it claims, executes, recovers a run
 * its predecessor left on SIGKILL, and sweeps an abandoned creation intent, on a database this
 * build migrated.
 */

let h: ControllerHarness;
let older: OlderBuild;
const dirs = tempDirs("rw-older-build-");
const live: ControllerProcessHandle[] = [];
const actor = { id: "test", role: "board" };

beforeAll(async () => {
  h = await startControllerHarness();
  older = checkoutOlderBuild(dirs());
});
afterEach(async () => {
  for (const p of live.splice(0)) {
    p.kill("SIGKILL");
    await p.exited;
  }
});
afterAll(() => h.close());

async function olderController() {
  const p = spawnController(
    { DATABASE_URL: h.db.url, EMULATOR_URL: h.emu.emulator.url, RUNWARDEN_INSTANCE_ID: "inst-a", RUNWARDEN_CONTROLLER_HOME: dirs() },
    { cwd: older.root, nodeArgs: older.nodeArgs, readyTimeoutMs: 60_000 },
  );
  live.push(p);
  await p.ready;
  // It is the older build's own program that runs, from its own checkout.
  expect(fs.readlinkSync(`/proc/${p.pid}/cwd`)).toBe(older.root);
  return p;
}

async function settled(runId: string) {
  return waitFor(`run ${runId} to settle`, async () => {
    const r = await h.db.db.run.findUniqueOrThrow({ where: { id: runId } });
    return r.status === "succeeded" || r.status === "failed" || r.status === "cancelled" ? r : null;
  }, 90_000);
}

describe(`the build before this one (the commit before this checkout's newest migration) against this build's schema`, () => {
  it("the database is ahead of it: it holds a migration the older build does not know", async () => {
    const applied = (await h.db.db.$queryRaw<{ migration_name: string }[]>`SELECT migration_name FROM _prisma_migrations WHERE finished_at IS NOT NULL`).map((m) => m.migration_name);
    expect(applied.filter((m) => m > older.newestMigration).length).toBeGreaterThanOrEqual(1);
    expect(fs.existsSync(path.join(older.root, "prisma", "migrations", applied.sort().at(-1)!))).toBe(false);
  });

  it("its controllers claim and execute runs, and one recovers the runs another left on SIGKILL: each succeeds without Retry, each turn once", async () => {
    const runs = await Promise.all(
      (["warm", "per_turn"] as const).map(async (sandboxMode, i) => {
        const marker = path.join(dirs(), "turns");
        const r = await submitRun(
          h.db.db,
          "inst-a",
          { companyId: "co-1", taskId: `older-${i}`, agent: "a", provider: "codex", sandboxMode, turns: 3, agentCommand: `sleep 1; printf '%s\\n' "$RUNWARDEN_TURN" >> '${marker}'` },
          actor,
        );
        return { id: r.id, marker };
      }),
    );
    const ids = runs.map((r) => r.id);
    const a = await olderController();
    await waitFor("both runs mid-run on the older build", async () => {
      const rows = await h.db.db.run.findMany({ where: { id: { in: ids } } });
      return rows.length === 2 && rows.every((r) => r.status === "running" && r.phase === "session_open" && r.turnsDone >= 1 && r.turnsDone < 3) ? rows : null;
    }, 60_000);
    a.kill("SIGKILL");
    await a.exited;
    await olderController();
    const done = await Promise.all(ids.map((id) => settled(id)));
    expect(done.map((r) => [r.status, r.turnsDone, r.canRetry, r.restarts >= 1])).toEqual(ids.map(() => ["succeeded", 3, false, true]));
    for (const r of runs) expect(fs.readFileSync(r.marker, "utf8").trim().split("\n")).toEqual(["1", "2", "3"]);
    expect(await h.db.db.run.count({ where: { previousRunId: { in: ids } } })).toBe(0);
  }, 180_000);

  it("its sweep reclaims an abandoned creation intent's sandbox and destroys it", async () => {
    const id = crypto.randomUUID();
    const name = creationName("rw", id);
    const dead = evidenceIdentity(await exitedProcessIdentity());
    await h.db.db.sandboxCreationIntent.create({
      data: {
        id,
        instanceId: "inst-a",
        companyId: "co-1",
        runId: `probe-${id}`,
        creationName: name,
        labels: json({ instance: "inst-a", company: "co-1", operation: id }),
        creator: json(dead),
        creatorBootId: dead.bootId,
        settleDeadline: new Date(Date.now() - 1000),
        nextAttemptAt: new Date(Date.now() - 1000),
      },
    });
    const planted = await h.emu.admin.plant({ name, labels: buildLabels({ instanceId: "inst-a", companyId: "co-1", operationId: id }) });
    await olderController();
    await waitFor("the intent reclaimed", async () => ((await h.db.db.sandboxCreationIntent.findUniqueOrThrow({ where: { id } })).status === "reclaimed" ? true : null), 60_000);
    await waitFor("its sandbox destroyed", async () => {
      const s = (await h.emu.admin.sandboxes({ includeDestroyed: true })).find((x) => x.id === planted.id);
      return s && /^destroy(ing|ed)$/.test(s.state) ? true : null;
    }, 30_000);
  }, 120_000);
});
