import fs from "node:fs";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { submitRun } from "../runs/submit";
import { shippedRunnerProgram } from "../providers/runner";
import { spawnController, type ControllerProcessHandle } from "../test/controller-process";
import { startControllerHarness, waitFor, type ControllerHarness } from "../test/controller";
import { tempDirs } from "../test/temp";
import { makeNextBuild } from "../waves/run/next-build";

/**
 * A deploy that changes runnerd.mjs (docs/runner.md, "Versions"; docs/rules.md §2.1): a per-turn
 * run's controller is SIGKILLed mid-run, and the next build's controller — another runnerd.mjs,
 * released beside the old one in its runner/releases.json — takes it over. The sandbox still runs
 * the old program: a released program whose protocol the new controller speaks, so the staged
 * attachment is admitted and the run goes on, each turn once; the other way round too, an older
 * controller knowing the newer program from its controller's row (known-runner-releases.ts). A
 * program outside the window is refused as before.
 */

let h: ControllerHarness;
const dirs = tempDirs("rw-next-build-");
const live: ControllerProcessHandle[] = [];
const actor = { id: "test", role: "board" };

beforeAll(async () => {
  h = await startControllerHarness();
});
// Each test's controllers end with it: a controller of one build left running would take the next test's run.
afterEach(async () => {
  for (const p of live.splice(0)) {
    p.kill("SIGKILL");
    await p.exited;
  }
});
afterAll(() => h.close());

/** The next build's runner directory: this runnerd.mjs with one line more, released beside this one. */
function nextBuild(): { root: string; digest: string } {
  return makeNextBuild(dirs(), { releaseOld: true, migrations: false });
}

async function controller(env: Record<string, string> = {}, cwd?: string) {
  const p = spawnController({ DATABASE_URL: h.db.url, EMULATOR_URL: h.emu.emulator.url, RUNWARDEN_INSTANCE_ID: "inst-a", RUNWARDEN_CONTROLLER_HOME: dirs(), ...env }, cwd ? { cwd } : {});
  live.push(p);
  await p.ready;
  return p;
}

/** A 3-turn per-turn run, its controller (of this build, or of the build in `cwd`) SIGKILLed with the second turn's sandbox in session (the staged path). */
async function killedOnTheStagedPath(taskId: string, cwd?: string) {
  const marker = path.join(dirs(), "turns");
  const r = await submitRun(
    h.db.db,
    "inst-a",
    { companyId: "co-1", taskId, agent: "a", provider: "codex", sandboxMode: "per_turn", turns: 3, agentCommand: `sleep 1; printf '%s\\n' "$RUNWARDEN_TURN" >> '${marker}'` },
    actor,
  );
  const a = await controller({}, cwd);
  await waitFor("the second turn's session", async () => {
    const x = await h.db.db.run.findUniqueOrThrow({ where: { id: r.id } });
    const lease = await h.db.db.environmentLease.findFirst({ where: { runId: r.id, status: "active", turn: 2 } });
    return x.turnsDone === 1 && x.phase === "session_open" && lease ? x : null;
  });
  a.kill("SIGKILL");
  await a.exited;
  return { run: r, marker };
}

async function settled(runId: string) {
  return waitFor(`run ${runId} to settle`, async () => {
    const r = await h.db.db.run.findUniqueOrThrow({ where: { id: runId } });
    return r.status === "succeeded" || r.status === "failed" ? r : null;
  }, 60_000);
}

describe("the next build's controller takes over a per-turn run whose sandbox runs this build's runner", () => {
  it("a released older program is driven: the run succeeds without Retry, each turn once", async () => {
    const { run, marker } = await killedOnTheStagedPath("upgrade-released");
    const next = nextBuild();
    await controller({}, next.root);
    // Each controller's row says which runner program it ships, and which build it is (the next one, outside a checkout: unknown).
    const rows = await h.db.db.controllerProcess.findMany({ where: { instanceId: "inst-a" }, orderBy: { bootedAt: "asc" } });
    expect(rows.map((r) => [r.runnerDigest, r.runnerProtocol])).toEqual([
      [shippedRunnerProgram().digest, 1],
      [next.digest, 1],
    ]);
    expect(rows.map((r) => r.version)).toEqual([expect.stringMatching(/^\d+\.\d+\.\d+(\+[0-9a-f]{7})?$/), "unknown"]);
    const done = await settled(run.id);
    expect(done).toMatchObject({ status: "succeeded", turnsDone: 3 });
    expect(fs.readFileSync(marker, "utf8").trim().split("\n")).toEqual(["1", "2", "3"]);
    const binding = await h.db.db.proof.findFirstOrThrow({ where: { runId: run.id, kind: "lease_binding" } });
    expect(binding.verdict).toBe("admitted");
    const program = (binding.checks as { name: string; ok: boolean; actual: string }[]).find((c) => c.name === "staged_runner_program_supported");
    expect(program).toMatchObject({ ok: true, actual: expect.stringMatching(/^[0-9a-f]{16}: protocol 1$/) });
    expect(await h.db.db.run.count({ where: { previousRunId: run.id } })).toBe(0);
  }, 120_000);

  it("a build whose runner protocol moved past the window (1 → 3) refuses this build's program: the run rests with Retry", async () => {
    const { run } = await killedOnTheStagedPath("upgrade-outside-window");
    await controller({}, makeNextBuild(dirs(), { releaseOld: true, migrations: false, protocol: 3 }).root);
    const done = await settled(run.id);
    expect(done).toMatchObject({ status: "failed", failureCode: "native_continuation_requires_reconciliation", canRetry: true });
    const binding = await h.db.db.proof.findFirstOrThrow({ where: { runId: run.id, kind: "lease_binding" } });
    expect(binding).toMatchObject({ verdict: "refused", reason: "staged_runner_program_unsupported" });
    const program = (binding.checks as { name: string; ok: boolean; expected: string; actual: string }[]).find((c) => c.name === "staged_runner_program_supported");
    expect(program).toMatchObject({ ok: false, expected: "a released runner program speaking protocol 2–3", actual: `${shippedRunnerProgram().digest}: protocol 1` });
  }, 120_000);
});

describe("this build's controller takes over a per-turn run whose sandbox runs the next build's runner (a rolling deploy's other direction)", () => {
  it("the next build's program, unknown to this build's manifest, is known from the next build's controller row and driven: the run succeeds without Retry, each turn once", async () => {
    const next = nextBuild();
    const { run, marker } = await killedOnTheStagedPath("downgrade-known", next.root);
    // This build's runner/releases.json does not name the next build's program.
    expect(fs.readFileSync(path.join(import.meta.dirname, "..", "..", "runner", "releases.json"), "utf8")).not.toContain(next.digest);
    await controller();
    const done = await settled(run.id);
    expect(done).toMatchObject({ status: "succeeded", turnsDone: 3 });
    expect(fs.readFileSync(marker, "utf8").trim().split("\n")).toEqual(["1", "2", "3"]);
    const binding = await h.db.db.proof.findFirstOrThrow({ where: { runId: run.id, kind: "lease_binding" } });
    expect(binding.verdict).toBe("admitted");
    const program = (binding.checks as { name: string; ok: boolean; actual: string }[]).find((c) => c.name === "staged_runner_program_supported");
    expect(program).toMatchObject({ ok: true, actual: `${next.digest}: protocol 1` });
    expect(await h.db.db.run.count({ where: { previousRunId: run.id } })).toBe(0);
  }, 120_000);
});

describe("a rolling deploy: the next build beside this one, then this one stopped (docs/operations.md, Upgrades and migrations)", () => {
  async function liveSandboxesOf(runIds: string[]) {
    return (await h.emu.admin.sandboxes()).filter((s) => runIds.includes(s.labels["runwarden.run"] ?? "") && !/^destroy(ing|ed)$/.test(s.state));
  }

  it.each([
    ["drained (SIGTERM)", "SIGTERM"],
    ["SIGKILLed mid-deploy", "SIGKILL"],
  ] as const)("two warm and two per-turn runs mid-turn, the old build %s: every run succeeds without Retry, each turn once, no sandbox left", async (_how, signal) => {
    const tag = signal.toLowerCase();
    const runs = await Promise.all(
      (["warm", "warm", "per_turn", "per_turn"] as const).map(async (sandboxMode, i) => {
        const marker = path.join(dirs(), "turns");
        const r = await submitRun(
          h.db.db,
          "inst-a",
          { companyId: "co-1", taskId: `rolling-${tag}-${i}`, agent: "a", provider: "codex", sandboxMode, turns: 4, agentCommand: `sleep 1; printf '%s\\n' "$RUNWARDEN_TURN" >> '${marker}'` },
          actor,
        );
        return { id: r.id, marker };
      }),
    );
    const ids = runs.map((r) => r.id);
    const old = await controller({ RUNWARDEN_CONCURRENCY: "8" });
    // Every run past its first turn and in session on the old build.
    await waitFor("every run mid-run on the old build", async () => {
      const rows = await h.db.db.run.findMany({ where: { id: { in: ids } } });
      return rows.length === 4 && rows.every((r) => r.status === "running" && r.phase === "session_open" && r.turnsDone >= 1 && r.turnsDone < 4) ? rows : null;
    }, 60_000);
    // The next build starts beside it (its start applies its one expand migration), then the old one stops.
    await controller({}, makeNextBuild(dirs(), { releaseOld: true, migrations: true }).root);
    old.kill(signal);
    await old.exited;
    const done = await Promise.all(ids.map((id) => settled(id)));
    expect(done.map((r) => [r.status, r.turnsDone, r.canRetry])).toEqual(ids.map(() => ["succeeded", 4, false]));
    for (const r of runs) expect(fs.readFileSync(r.marker, "utf8").trim().split("\n")).toEqual(["1", "2", "3", "4"]);
    expect(await h.db.db.run.count({ where: { previousRunId: { in: ids } } })).toBe(0);
    await waitFor("every sandbox of the runs torn down", async () => ((await liveSandboxesOf(ids)).length === 0 ? true : null), 30_000);
  }, 180_000);
});

