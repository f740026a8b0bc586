import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { EmulatorAdminClient } from "../emulator/admin-client";
import { createThrowawayDatabase, type ThrowawayDatabase } from "../test/emulator";
import { submitRun } from "../runs/submit";
import { EmulatorChild, freePort } from "../test/emulator-child";
import { spawnController, type ControllerProcessHandle } from "../test/controller-process";
import { startControllerHarness, waitFor, type ControllerHarness } from "../test/controller";
import { tempDirs } from "../test/temp";

const home = tempDirs("rw-ctl-home-");

/**
 * The emulator (a local Daytona) SIGKILLed and restarted while a run's runner works: the
 * runner is a detached process in the sandbox, so it keeps running, and the run finishes
 * with each turn's side effect exactly once (docs/rules.md, "Turns").
 */

let h: ControllerHarness;
let database: ThrowawayDatabase;
let dataDir: string;
let scratch: string;
let port: number;
let emulator: EmulatorChild | null = null;
let ctl: ControllerProcessHandle | null = null;

beforeAll(async () => {
  h = await startControllerHarness();
  database = await createThrowawayDatabase(inject("adminUrl"), inject("runPrefix"), "emurun");
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "rw-emu-restart-"));
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), "rw-emu-markers-"));
  port = await freePort();
  emulator = new EmulatorChild({ port, adminUrl: inject("adminUrl"), database: database.name, dataDir });
});

afterAll(async () => {
  ctl?.kill("SIGKILL");
  await ctl?.exited;
  // The sandboxes' detached processes end with the test: reset kills them.
  if (emulator?.running) await new EmulatorAdminClient(`http://127.0.0.1:${port}`).reset().catch(() => {});
  await emulator?.kill();
  await database?.drop();
  await h?.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
  fs.rmSync(scratch, { recursive: true, force: true });
});

describe("the emulator SIGKILLed and restarted with runners alive", () => {
  it("the runner keeps running and the run finishes, each turn once", async () => {
    await emulator?.start();
    const marker = path.join(scratch, "marker.txt");
    const r = await submitRun(
      h.db.db,
      "inst-a",
      { companyId: "co-1", taskId: "emu-kill", agent: "a", provider: "codex", turns: 4, agentCommand: `sleep 1; printf '%s\\n' "$RUNWARDEN_TURN" >> '${marker}'` },
      { id: "test", role: "operator" },
    );
    ctl = spawnController({
      DATABASE_URL: h.db.url,
      EMULATOR_URL: `http://127.0.0.1:${port}`,
      RUNWARDEN_INSTANCE_ID: "inst-a",
      RUNWARDEN_CONTROLLER_HOME: home(),
    });
    await ctl.ready;
    await waitFor("the first turn", async () => ((await h.db.db.run.findUniqueOrThrow({ where: { id: r.id } })).turnsDone >= 1 ? true : null), 60_000);
    const admin = new EmulatorAdminClient(`http://127.0.0.1:${port}`);
    const sandbox = (await admin.sandboxes()).find((s) => s.labels["runwarden.run"] === r.id);
    expect(sandbox?.runnerProcess.state).toBe("running");
    const runnerPid = sandbox!.runnerProcess.pid!;

    await emulator?.kill();
    // The runner is the sandbox's process, not the emulator's: it is still there.
    expect(fs.existsSync(`/proc/${runnerPid}`)).toBe(true);
    // A sleep on purpose: the emulator stays down for a while, so the controller's calls fail meanwhile.
    await new Promise((res) => setTimeout(res, 1500));
    await emulator?.start();
    expect((await admin.sandboxes()).find((s) => s.id === sandbox!.id)?.runnerProcess).toMatchObject({ state: "running", pid: runnerPid });

    const done = await waitFor("the run to settle", async () => {
      const x = await h.db.db.run.findUniqueOrThrow({ where: { id: r.id } });
      return x.status === "succeeded" || x.status === "failed" ? x : null;
    }, 90_000);
    expect({ status: done.status, turnsDone: done.turnsDone, code: done.failureCode, detail: done.failureDetail }).toMatchObject({ status: "succeeded", turnsDone: 4 });
    expect(fs.readFileSync(marker, "utf8").trim().split("\n")).toEqual(["1", "2", "3", "4"]);
  }, 180_000);
});
