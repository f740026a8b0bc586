import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { submitRun } from "../runs/submit";
import { spawnController, type ControllerProcessHandle } from "../test/controller-process";
import { startControllerHarness, waitFor, type ControllerHarness } from "../test/controller";

/**
 * Silence is judged on the database's clock (docs/rules.md §2.10): an NTP step on one host must not
 * make a healthy controller on another look silent. Two real controller processes, the second in
 * a PID namespace of its own (another host: it cannot probe the first's pid, so only silence
 * counts), one of them with its clock moved by libfaketime (Debian's `libfaketime`; `.ci/run`
 * installs it) — the process's own clock, nothing faked inside the code.
 */

const FAKETIME_LIBS = ["/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1", "/usr/lib/aarch64-linux-gnu/faketime/libfaketimeMT.so.1", "/usr/lib/faketime/libfaketimeMT.so.1"];

function faketime(offset: string): Record<string, string> {
  const lib = FAKETIME_LIBS.find((p) => fs.existsSync(p));
  if (!lib) throw new Error(`libfaketime is not installed (looked for ${FAKETIME_LIBS.join(", ")}): apt-get install libfaketime`);
  return { LD_PRELOAD: lib, FAKETIME: offset };
}

let h: ControllerHarness;
const procs: ControllerProcessHandle[] = [];
let scratch: string;

beforeAll(async () => {
  h = await startControllerHarness();
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), "rw-skew-"));
});

afterAll(async () => {
  for (const p of procs.splice(0)) {
    p.kill("SIGKILL");
    await p.exited;
  }
  await h?.close();
  fs.rmSync(scratch, { recursive: true, force: true });
});

function controller(clock: string | null, pidNamespace = false): ControllerProcessHandle {
  const p = spawnController(
    {
      DATABASE_URL: h.db.url,
      EMULATOR_URL: h.emu.emulator.url,
      RUNWARDEN_INSTANCE_ID: "inst-a",
      RUNWARDEN_CONTROLLER_HOME: fs.mkdtempSync(path.join(scratch, "home-")),
      // A window of 3 s: 120 s of skew is forty windows.
      RUNWARDEN_EXECUTOR_TIMEOUT_MS: "3000",
      RUNWARDEN_SWEEP_INTERVAL_MS: "60000",
      ...(clock ? faketime(clock) : {}),
    },
    { pidNamespace },
  );
  procs.push(p);
  return p;
}

const bootIdOf = (p: ControllerProcessHandle) => /bootId=(\S+)/.exec(p.output.find((l) => l.startsWith("controller ready:")) ?? "")?.[1] ?? "";

describe("silence is judged on the database's clock (§2.10)", () => {
  it.each([
    { name: "the other host's clock is 120 s ahead", executorClock: null, otherClock: "+120s" },
    { name: "the executing host's clock is 120 s behind", executorClock: "-120s", otherClock: null },
  ])("$name: a healthy controller keeps its run; it finishes once, never taken over", async ({ executorClock, otherClock }) => {
    const marker = path.join(scratch, `marker-${executorClock ?? "0"}-${otherClock ?? "0"}.txt`);
    const a = controller(executorClock);
    await a.ready;
    const aBoot = bootIdOf(a);
    const run = await submitRun(
      h.db.db,
      "inst-a",
      { companyId: "co-1", taskId: `skew-${executorClock ? "behind" : "ahead"}`, agent: "a", provider: "codex", sandboxMode: "warm", turns: 4, agentCommand: `sleep 1; printf '%s\\n' "$RUNWARDEN_TURN" >> '${marker}'` },
      { id: "test", role: "operator" },
    );
    await waitFor("A to finish a turn", async () => {
      const r = await h.db.db.run.findUniqueOrThrow({ where: { id: run.id } });
      return r.executorBootId === aBoot && r.turnsDone >= 1 ? r : null;
    }, 60_000);

    // Another host, with the other clock: its recovery looks at A's run every 50 ms while A
    // works on through several silence windows.
    const b = controller(otherClock, true);
    await b.ready;
    const bBoot = bootIdOf(b);
    const done = await waitFor("the run to settle", async () => {
      const r = await h.db.db.run.findUniqueOrThrow({ where: { id: run.id } });
      return r.status === "succeeded" || r.status === "failed" ? r : null;
    }, 90_000);

    const recoveries = await h.db.db.runEvent.findMany({ where: { runId: run.id, type: "recovery_started" } });
    expect(recoveries.map((e) => ({ by: e.bootId, executorWas: (e.data as { executorWas?: string } | null)?.executorWas }))).toEqual([]);
    // Claimed by A at epoch 1 and ended by A (an ending moves the epoch on once more): no takeover between.
    expect({ status: done.status, restarts: done.restarts, epoch: done.executorEpoch }).toEqual({ status: "succeeded", restarts: 0, epoch: 2 });
    expect((await h.db.db.runEvent.findFirstOrThrow({ where: { runId: run.id, type: "run_succeeded" } })).bootId).toBe(aBoot);
    expect(await h.db.db.runEvent.count({ where: { runId: run.id, bootId: bBoot } })).toBe(0);
    expect(fs.readFileSync(marker, "utf8").trim().split("\n")).toEqual(["1", "2", "3", "4"]);
    // Both heartbeat on the database's clock, whatever their own says.
    const seen = await h.db.db.$queryRaw<Array<{ boot_id: string; behind_ms: number }>>`
      SELECT boot_id, extract(epoch FROM (now() - last_seen_at)) * 1000 AS behind_ms FROM controller_processes WHERE boot_id IN (${aBoot}, ${bBoot})`;
    expect(seen).toHaveLength(2);
    for (const s of seen) expect(Math.abs(Number(s.behind_ms)), `controller ${s.boot_id}`).toBeLessThan(10_000);

    for (const p of procs.splice(0)) {
      p.kill("SIGKILL");
      await p.exited;
    }
  }, 180_000);
});
