import os from "node:os";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startControllerHarness, type ControllerHarness } from "../test/controller";
import { readEnv } from "../env";
import { restingCode, restingFailure, RUN_DECIDING_KINDS, verdictSchema } from "../engine";
import type { PlannedTask, WavePlan } from "./plan";
import type { WaveReport } from "../shared/wave-report";
import { runWave, type WaveRunOptions } from "./runner";
import { importWaveReport, loadWaveReport } from "./store";
import { tempDirs } from "../test/temp";
import { shippedRunnerProgram } from "../providers/runner";
import { NEXT_BUILD_MIGRATION } from "./run/next-build";
import { startBusyLoops } from "../../scripts/lib/processes";

const dataDir = tempDirs("rw-wave-");

/**
 * Whole waves with real controller processes against the emulator (docs/rules.md §5). A wave
 * costs seconds of controller starts and settling whatever it carries, so the passing waves
 * are few and dense: three of them land every kill kind (K1, K2, K4 at after_create, K5, K15)
 * and fire every fault (bind, reject, late, unconnected; archive, outage, slow_start,
 * rate_limit), each read from the wave report's own kill and fault records, and every check
 * of a kill (its forecast, R7) is made at every kill. Each deliberately broken rule gets the
 * smallest wave that still reaches it. The seeded plans at full size are `npm run wave`'s.
 */

let h: ControllerHarness;
let seed = 9000;

beforeAll(async () => {
  h = await startControllerHarness();
});
afterAll(() => h.close());

const task = (key: string, over: Partial<PlannedTask> = {}): PlannedTask => ({
  key,
  agent: "a",
  provider: "codex",
  target: "remote",
  sandboxMode: "warm",
  turns: 4,
  faults: [],
  ...over,
});

async function wave(plan: Omit<WavePlan, "seed">, extra: Partial<WaveRunOptions> = {}): Promise<WaveReport> {
  seed += 1;
  // Every wave runs in a process that was given a real Daytona (one that refuses every call):
  // its controllers must still be the wave's, on its emulator, as under npm start (runner.ts
  // clears DAYTONA_API_URL for them).
  vi.stubEnv("DAYTONA_API_URL", "http://127.0.0.1:9/api");
  vi.stubEnv("DAYTONA_API_KEY", "a-real-key");
  return runWave({
    env: readEnv({ DATABASE_URL: h.db.url, RUNWARDEN_DATA_DIR: dataDir() }),
    emulatorUrl: h.emu.emulator.url,
    seed,
    tasks: plan.tasks.length,
    kills: plan.kills.map((k) => k.kind),
    faults: [],
    concurrency: plan.concurrency,
    retries: 1,
    timeoutMs: 90_000,
    plan: { ...plan, seed },
    ...extra,
  }).finally(() => vi.unstubAllEnvs());
}

/** Failed checks, each with the wave's events when any failed (what a reader needs to see why). */
function failing(report: WaveReport) {
  const failed = report.tasks.flatMap((t) => Object.entries(t.checks).filter(([, c]) => !c.ok).map(([id, c]) => `${t.id} ${id}: ${c.detail}`));
  return failed.length ? [...failed, ...report.events.map((e) => `  ${(e.atMs / 1000).toFixed(1)} s ${e.kind}: ${e.detail}`)] : [];
}


/** The wave's events, one line each: the message of an assertion that needs the wave's story. */
function events(report: WaveReport): string {
  return report.events.map((e) => `${(e.atMs / 1000).toFixed(1)} s ${e.kind}: ${e.detail}`).join("\n");
}

/** The turn numbers each run's agent wrote (R3's markers), by run id. */
function turnMarkers(report: WaveReport): Record<string, number[]> {
  return Object.assign({}, ...report.tasks.map((t) => (t.checks.R3 as { turnMarkers?: Record<string, number[]> }).turnMarkers ?? {})) as Record<string, number[]>;
}

/**
 * What every kill of a passing wave must show, whatever else the wave carries: it landed on a
 * run (its kill event names the kind), the wave left no orphan and touched no decoy, and R7 ran.
 * R7 at every kill (runner.ts `forecastKill`): one forecast per kill, in the kills' order, taken
 * before its restart; the run the kill caught in flight was forecast and its forecast held — or
 * the wave left it out of the comparison and named it (caught moving, or not yet in session).
 * A K4's own run is the one at its crash point: held, or named, in a forecast of the wave when
 * the K4's target held it.
 */
async function expectEveryKillForecast(report: WaveReport) {
  const kills = report.events.filter((e) => e.kind === "kill" && /^K(\d+|D): SIG(KILL|TERM|STOP) /.test(e.detail)).map((e) => e.detail);
  expect(kills.map((k) => k.split(":")[0])).toEqual(report.kills.map((k) => k.kind));
  expect(report.orphanSandboxes).toEqual([]);
  expect(report.decoys.every((d) => d.intact)).toBe(true);
  expect(report.tasks.every((t) => t.checks.R7 !== undefined)).toBe(true);
  const forecasts = report.events.filter((e) => e.kind === "forecast").map((e) => e.detail);
  expect(forecasts).toEqual(report.kills.map((k) => expect.stringMatching(new RegExp(`^before ${k.kind}: \\d+ continue`))));
  // The controllers the wave killed, and those that died at a K4's crash point.
  const crashed = report.events.flatMap((e) => (e.kind === "crash" ? [Number(/controller pid (\d+) reached/.exec(e.detail)?.[1])] : []));
  const killed = [...report.kills.map((k) => k.targetPid), ...crashed];
  const heldOrNamed = async (kill: string, runId: string, forecastIds: string[], details: string[]) => {
    const row = await h.db.db.forecastRun.findFirst({ where: { runId, forecastId: { in: forecastIds } }, include: { forecast: { select: { createdAt: true } } } });
    if (row?.outcome === null) {
      // Unchecked for good only where the controller that restarted the run was killed in its
      // turn before a proof decided that restart (`checkForecastRun` answers null while the
      // first restart after the forecast is open): a later kill of the same wave cut it short.
      const first = await h.db.db.runEvent.findFirst({ where: { runId, type: "recovery_started", at: { gte: row.forecast.createdAt } }, orderBy: { at: "asc" } });
      const restarter = first?.bootId ? await h.db.db.controllerProcess.findUnique({ where: { bootId: first.bootId } }) : null;
      expect({ kill, run: runId, unchecked: "its restarter was killed", pid: restarter?.pid }).toEqual({ kill, run: runId, unchecked: "its restarter was killed", pid: expect.toBeOneOf(killed) });
    } else if (row) expect({ kill, run: runId, outcome: row.outcome, actual: row.actual }).toMatchObject({ kill, run: runId, outcome: "held" });
    else expect(details.some((d) => new RegExp(`not kept, [^;)]*${runId}`).test(d)), `run ${runId} neither forecast nor named: ${details.join(" | ")}`).toBe(true);
  };
  const ids = forecasts.map((d) => /\(forecast (\S+), /.exec(d)?.[1] ?? "none");
  for (const [i, kill] of report.kills.entries()) {
    const inFlight = /with run (\S+) in flight/.exec(kills[i]!)?.[1];
    expect(inFlight, kills[i]).toMatch(/^[0-9a-f-]{36}$/);
    expect(kill.interruptedRunId, `${kill.kind}: ${kill.detail}`).toMatch(/^[0-9a-f-]{36}$/);
    if (kill.kind === "K4") {
      // Its crash run, unless the armed controller claimed it fresh after the kill: then no
      // forecast could see it (each lists the target's live runs), and its claim says so.
      const takenAt = (await h.db.db.forecast.findUniqueOrThrow({ where: { id: ids[i]! } })).createdAt;
      const claims = await h.db.db.runEvent.findMany({ where: { runId: kill.interruptedRunId!, type: "claimed" }, select: { at: true } });
      if (claims.some((c) => c.at < takenAt)) await heldOrNamed(`K4 crash point: ${kill.detail}`, kill.interruptedRunId!, ids, forecasts);
      else expect(claims.length, `K4 crash run ${kill.interruptedRunId} was never claimed`).toBeGreaterThan(0);
    } else expect(kill.interruptedRunId).toBe(inFlight);
    await heldOrNamed(kills[i]!, inFlight!, [ids[i]!], [forecasts[i]!]);
  }
}

// Each passing wave runs once, before its tests; each test reads one property off its report.
// A wave that fails to run at all fails every test of its describe.

describe("the provider's own faults with K1", () => {
  let report: WaveReport;
  beforeAll(async () => {
    report = await wave(
      {
        tasks: [
          task("t01", { turns: 4, faults: ["archive"] }),
          task("t02", { turns: 4, faults: ["outage"] }),
          task("t03", { sandboxMode: "per_turn", turns: 3, faults: ["slow_start"] }),
          task("t04", { turns: 3, faults: ["rate_limit"] }),
        ],
        // The archive and the outage land with the first kill (runner.ts `KillEffects`).
        kills: [{ kind: "K1", atMs: 900 }],
        concurrency: 4,
      },
      { timeoutMs: 150_000 },
    );
    console.log(`wave ${report.id} (the provider's own faults):\n${report.faults.map((f) => `  ${f.task} ${f.fault}: ${f.fired ? "fired" : "did not fire"} — ${f.detail}`).join("\n")}`);
  }, 180_000);

  it("R1–R7 pass, K1 lands and each fault fires, as its detail says", () => {
    expect(failing(report)).toEqual([]);
    expect(report.kills.map((k) => [k.kind, k.landed])).toEqual([["K1", true]]);
    expect(report.faults.map((f) => [f.fault, f.fired, f.detail])).toEqual([
      ["archive", true, expect.stringMatching(/archived at \d+ ms while no controller ran/)],
      ["outage", true, expect.stringMatching(/answered 503 to \d+ call\(s\) for \d+ ms from \d+ ms; [1-9]\d* run\(s\) waited through it/)],
      ["slow_start", true, expect.any(String)],
      ["rate_limit", true, expect.any(String)],
    ]);
    expect(report.passed).toBe(true);
  });

  it("the kill was forecast and the forecast held; no orphan, no decoy touched", async () => {
    await expectEveryKillForecast(report);
  });

  it("an outage and an archive are no failure of the runs: every task succeeded without Retry, no recovery attempt counted", async () => {
    expect(report.tasks.map((t) => [t.id, t.failureCodes, t.retriesNeeded])).toEqual([
      ["t01", [], 0],
      ["t02", [], 0],
      ["t03", [], 0],
      ["t04", [], 0],
    ]);
    const runs = await h.db.db.run.findMany({ where: { waveId: report.id } });
    expect(runs.map((r) => r.recoveryAttempts)).toEqual(runs.map(() => 0));
  });

  it("the archived sandbox was started again from the archive by the restarted controller, once", async () => {
    const archivedRun = report.tasks.find((t) => t.id === "t01")!.runs[0]!.id;
    // The decision to start it (a proof before the start), then the verdict on what the provider showed after.
    const ups = await h.db.db.proof.findMany({ where: { runId: archivedRun, kind: "stopped_sandbox" }, orderBy: { evaluatedAt: "asc" } });
    expect(ups.map((p) => p.verdict)).toEqual(["start_sandbox", "proceed"]);
    expect(await h.db.db.runEvent.count({ where: { runId: archivedRun, type: "sandbox_start_attempted" } })).toBe(1);
  });
});

describe("K5, a stall past the silence window on another host", () => {
  let report: WaveReport;
  beforeAll(async () => {
    report = await wave({
      tasks: [task("t01", { sandboxMode: "per_turn", turns: 5 }), task("t02", { turns: 5 }), task("t03", { sandboxMode: "per_turn", turns: 3 })],
      kills: [{ kind: "K5", atMs: 700 }],
      concurrency: 3,
    });
  }, 150_000);

  it("R1–R7 pass and K5 lands; the kill was forecast and the forecast held", async () => {
    expect(failing(report)).toEqual([]);
    expect(report.kills.map((k) => [k.kind, k.landed])).toEqual([["K5", true]]);
    expect(report.passed).toBe(true);
    await expectEveryKillForecast(report);
  });

  it("the other host takes the stalled controller's run over by silence alone, on the database's clock", () => {
    const k5 = report.kills[0]!;
    // The other host cannot judge the stalled pid; its recovery says it judged the executor
    // silent past the window.
    expect(k5.takeoverAtMs!).toBeGreaterThan(k5.firedAtMs!);
    expect(k5.takeoverReason).toMatch(/^silent_for_\d+s$/);
    expect(Number(/^silent_for_(\d+)s$/.exec(k5.takeoverReason!)![1])).toBeGreaterThanOrEqual(6);
    expect(k5.detail).toMatch(/since its last heartbeat; the window is 6 s/);
    const silent = Number(/\(([\d.]+) s since its last heartbeat/.exec(k5.detail)![1]);
    expect(silent).toBeGreaterThanOrEqual(6);
    expect(report.events.some((e) => e.kind === "controller" && e.detail.includes("PID namespace of its own"))).toBe(true);
    expect(report.events.some((e) => e.kind === "kill" && e.detail.startsWith("K5: SIGCONT"))).toBe(true);
  });

  it("woken, the stalled controller runs no turn twice: the run succeeds, each turn once, without Retry; a run caught in its bootstrap rests with Retry (§2.2)", async () => {
    const k5 = report.kills[0]!;
    const interrupted = await h.db.db.run.findUniqueOrThrow({ where: { id: k5.interruptedRunId! } });
    expect(interrupted).toMatchObject({ status: "succeeded", previousRunId: null });
    expect(interrupted.restarts).toBeGreaterThanOrEqual(1);
    expect(turnMarkers(report)[interrupted.id]).toEqual(Array.from({ length: interrupted.turnsPlanned }, (_, i) => i + 1));
    // The interrupted run's task needed no Retry (its first run succeeded). Another run the
    // stall caught in its bootstrap, after its runner connected, is refused a restart on the
    // other host — which holds no local restart proof for it (docs/rules.md §2.2) — and rests
    // with Retry: by the rules, and the only code such a task may carry here.
    const retried = report.tasks.filter((t) => t.retriesNeeded > 0);
    expect(retried.map((t) => t.runs[0]?.id)).not.toContain(interrupted.id);
    expect(retried.flatMap((t) => t.failureCodes.filter((c) => c !== "native_restart_recovery_blocked").map((c) => `${t.id}: ${c}`)), events(report)).toEqual([]);
  });
});

describe("KD, a rolling deploy to the next build", () => {
  let report: WaveReport;
  beforeAll(async () => {
    report = await wave({ tasks: [task("t01", { turns: 5 }), task("t02", { sandboxMode: "per_turn", turns: 4 })], kills: [{ kind: "KD", atMs: 500 }], concurrency: 2 });
  }, 150_000);

  it("KD lands: the next build's controller, started beside the old one, takes the old one's run over after its SIGKILL; R1–R7 pass, no Retry, each turn once", async () => {
    expect(report.kills.map((k) => `${k.kind} ${k.landed ? "landed" : `did not land: ${k.detail}`}`)).toEqual(["KD landed"]);
    expect(failing(report)).toEqual([]);
    expect(report.passed).toBe(true);
    await expectEveryKillForecast(report);
    expect(report.tasks.filter((t) => t.retriesNeeded > 0).map((t) => `${t.id}: ${t.failureCodes.join(", ")}`), events(report)).toEqual([]);
    const kd = report.kills[0]!;
    const interrupted = await h.db.db.run.findUniqueOrThrow({ where: { id: kd.interruptedRunId! } });
    expect(interrupted).toMatchObject({ status: "succeeded", previousRunId: null });
    expect(turnMarkers(report)[interrupted.id]).toEqual(Array.from({ length: interrupted.turnsPlanned }, (_, i) => i + 1));
    // The taker is the next build: another runner program, on a schema with its migration applied.
    const taker = await h.db.db.runEvent.findFirstOrThrow({ where: { runId: interrupted.id, type: "recovery_started" }, orderBy: { at: "asc" } });
    const takerRow = await h.db.db.controllerProcess.findUniqueOrThrow({ where: { bootId: taker.bootId! } });
    expect(takerRow.runnerDigest).toMatch(/^[0-9a-f]{16}$/);
    expect(takerRow.runnerDigest).not.toBe(shippedRunnerProgram().digest);
    expect(await h.db.db.$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM _prisma_migrations WHERE migration_name = ${NEXT_BUILD_MIGRATION}`).toEqual([{ n: 1n }]);
  });
});

describe("K4, K1, K15 and K2 in turn on a loaded machine, with the runner's faults", () => {
  let report: WaveReport;
  beforeAll(async () => {
    // Load: a busy loop per core until the last kill fired, so controllers take seconds to be
    // ready — the condition under which kills timed from the wave's start fired back to back.
    // After it the load shows nothing more: the faulted runs' retries would only take longer.
    const { stop: unload } = startBusyLoops(Math.max(2, os.availableParallelism()));
    try {
      report = await wave(
        {
          tasks: [
            // First claimed: its session attempts, until they are exhausted and Retry follows, are
            // the wave's longest stretch of work, run beside the kills rather than after them.
            task("t01", { sandboxMode: "per_turn", faults: ["unconnected"], target: "local" }),
            task("t02", { sandboxMode: "per_turn", faults: ["reject"] }),
            task("t03", { faults: ["bind"] }),
            task("t04", { faults: ["late"] }),
            // The last kill, K2, must find a run inside a turn rather than finishing its last one.
            task("t05", { provider: "claude", turns: 6 }),
            task("t06", { sandboxMode: "per_turn", provider: "claude", turns: 6 }),
          ],
          kills: [
            { kind: "K4", atMs: 600, crashAt: "after_create" },
            { kind: "K1", atMs: 700 },
            { kind: "K15", atMs: 900 },
            { kind: "K2", atMs: 800 },
          ],
          concurrency: 2,
        },
        { timeoutMs: 240_000, onEvent: (e) => e.kind === "kill" && e.detail.startsWith("K2:") && unload() },
      );
    } finally {
      unload();
    }
    console.log(`wave ${report.id} (every other kill, loaded):\n${report.events.filter((e) => ["kill", "crash", "forecast", "retry"].includes(e.kind)).map((e) => `  ${(e.atMs / 1000).toFixed(1)} s ${e.kind}: ${e.detail}`).join("\n")}`);
  }, 300_000);

  it("each kill lands on work in flight and its controller is restarted; K4 at its crash point, before the next kill", () => {
    expect(report.kills.map((k) => `${k.kind} ${k.landed ? "landed" : `did not land: ${k.detail}`}`)).toEqual(["K4 landed", "K1 landed", "K15 landed", "K2 landed"]);
    for (const k of report.kills) {
      expect(k.firedAtMs).not.toBeNull();
      expect(k.restartPid).not.toBeNull();
    }
    // The K4 crash point is in the report's events, after the K4 kill armed it and before the next kill.
    const armedAt = report.events.findIndex((e) => e.kind === "kill" && e.detail.startsWith("K4:"));
    const crashedAt = report.events.findIndex((e) => e.kind === "crash" && /reached its crash point after_create/.test(e.detail));
    const nextKillAt = report.events.findIndex((e) => e.kind === "kill" && e.detail.startsWith("K1:"));
    expect(armedAt).toBeGreaterThanOrEqual(0);
    expect(crashedAt).toBeGreaterThan(armedAt);
    expect(nextKillAt).toBeGreaterThan(crashedAt);
    expect(report.kills[0]!.crashPointAtMs).toBeLessThan(report.kills[1]!.firedAtMs!);
  });

  it("R1–R7 pass; each of the runner's faults fires, and the runs it fails end with its code, one Retry where one is offered", () => {
    expect(failing(report)).toEqual([]);
    expect(report.faults.map((f) => [f.fault, f.fired])).toEqual([
      ["unconnected", true],
      ["reject", true],
      ["bind", true],
      ["late", true],
    ]);
    expect(report.passed).toBe(true);
    const codes = report.tasks.flatMap((t) => t.failureCodes);
    expect(codes).toContain("native_provider_startup_rejected");
    expect(codes).toContain("runner_ingress_bind_conflict");
    expect(report.tasks.find((t) => t.id === "t02")!.retriesNeeded).toBe(1);
    expect(report.tasks.some((t) => t.restartCrossing)).toBe(true);
  });

  it("every kill was forecast and each forecast held; no orphan, no decoy touched", async () => {
    await expectEveryKillForecast(report);
  });

  it("exactly once, counted (docs/rules.md §5, R3): every run wrote its turns once each, and a run that succeeded wrote all of them", async () => {
    const allRuns = await h.db.db.run.findMany({ where: { waveId: report.id } });
    const markers = turnMarkers(report);
    expect(Object.keys(markers).sort()).toEqual(allRuns.map((r) => r.id).sort());
    for (const r of allRuns.filter((x) => x.status === "succeeded")) {
      expect(markers[r.id], `run ${r.id}`).toEqual(Array.from({ length: r.turnsPlanned }, (_, i) => i + 1));
    }
  });

  it("the run never contradicts its proof: every failed run rests in the code its last run-deciding proof gives", async () => {
    const failedRuns = await h.db.db.run.findMany({ where: { waveId: report.id, status: "failed" } });
    expect(failedRuns.length).toBeGreaterThan(0);
    for (const run of failedRuns) {
      const proofs = await h.db.db.proof.findMany({ where: { runId: run.id, kind: { in: [...RUN_DECIDING_KINDS] } }, orderBy: { evaluatedAt: "desc" } });
      expect(proofs.length, `run ${run.id} (${run.failureCode}) has no run-deciding proof`).toBeGreaterThan(0);
      // Proofs stored within one millisecond tie: of those, the one that rests the run.
      const last = proofs.filter((p) => p.evaluatedAt.getTime() === proofs[0]!.evaluatedAt.getTime()).map((p) => verdictSchema.parse(p.output));
      const verdict = last.find((v) => restingCode(v) !== null) ?? last[0]!;
      expect({ run: run.id, code: run.failureCode, owner: run.owner, canRetry: run.canRetry }).toEqual({
        run: run.id,
        code: restingCode(verdict),
        owner: restingFailure(verdict)?.owner,
        canRetry: restingFailure(verdict)?.canRetry,
      });
    }
  });

  it("the stored report holds every task with its seven checks", async () => {
    const stored = await loadWaveReport(h.db.db, report.id);
    expect(stored.tasks).toHaveLength(6);
    const rows = await h.db.db.chaosWaveTask.findMany({ where: { waveId: report.id }, include: { checks: true } });
    expect(rows.every((r) => r.checks.length === 7)).toBe(true);
  });
});

// Each broken rule's wave makes no Retry (retries 0): the check it breaks judges the runs the
// kills met, and a Retry's fresh run only lengthens the wave.
describe("a deliberately broken rule makes the matching check fail", () => {
  it("staged restarts admitted only on resumed leases (seed 000's bug) → R2", { timeout: 120_000 }, async () => {
    // The drain must find a run inside a turn, on its sandbox (a per-turn run between turns
    // has given it back and restarts on a fresh one, which no rule compares): turns of 1.5 s,
    // against the ~0.4 s between two of them, and a second drain after the first restart.
    const report = await wave(
      {
        tasks: [task("t01", { sandboxMode: "per_turn", turns: 4 }), task("t02", { sandboxMode: "per_turn", turns: 4 })],
        kills: [
          { kind: "K2", atMs: 1500 },
          { kind: "K2", atMs: 1000 },
        ],
        concurrency: 2,
      },
      { breakRule: "staged_requires_resumed", turnMs: 1500, retries: 0, quiesceMs: 4_000 },
    );
    expect(report.passed).toBe(false);
    const r2 = report.tasks.filter((t) => !t.checks.R2.ok);
    expect(r2.length).toBeGreaterThan(0);
    expect(r2[0]!.checks.R2.detail).toMatch(/lease_binding recorded refused, the rules give admitted/);
  });

  it("a creator's exit ignored (before seed 003) → R4", { timeout: 120_000 }, async () => {
    const report = await wave(
      // One run for the kill to catch; its next turn's sandbox is the armed controller's to create.
      { tasks: [task("t01", { sandboxMode: "per_turn", turns: 3 })], kills: [{ kind: "K4", atMs: 300, crashAt: "after_create" }], concurrency: 1 },
      { breakRule: "skip_creator_exit", timeoutMs: 40_000, quiesceMs: 4_000, retries: 0 },
    );
    expect(report.passed).toBe(false);
    expect(report.orphanSandboxes.length).toBeGreaterThan(0);
    expect(report.tasks.some((t) => !t.checks.R4.ok)).toBe(true);
  });

  it("a lost teardown claim's fence kept (before seed 003) → R5", { timeout: 120_000 }, async () => {
    const report = await wave(
      // One run: the kill catches it, the armed controller finishes it and dies claiming its teardown.
      { tasks: [task("t01", { turns: 2 })], kills: [{ kind: "K4", atMs: 300, crashAt: "during_teardown_claim" }], concurrency: 1 },
      { breakRule: "keep_lost_fences", timeoutMs: 40_000, quiesceMs: 4_000, retries: 0 },
    );
    expect(report.passed).toBe(false);
    expect(report.tasks.some((t) => !t.checks.R5.ok)).toBe(true);
  });
});

describe("import", () => {
  it("refuses malformed and duplicate reports, storing nothing", async () => {
    const report = await loadWaveReport(h.db.db, (await h.db.db.chaosWave.findFirstOrThrow({ where: { passed: true }, orderBy: { startedAt: "asc" } })).id);
    const count = () => h.db.db.chaosWave.count();
    const before = await count();

    await expect(importWaveReport(h.db.db, report)).rejects.toThrow(/already stored/);
    await expect(importWaveReport(h.db.db, { ...report, id: "wave-1" })).rejects.toThrow(/report\.id: expected a wave id/);
    await expect(importWaveReport(h.db.db, { ...report, id: "w-20200101T000000-s1", tasks: [] })).rejects.toThrow(/report\.tasks/);
    await expect(importWaveReport(h.db.db, { ...report, id: "w-20200101T000000-s1", passed: false })).rejects.toThrow(/report\.passed: says false/);
    const { seed: _seed, ...noSeed } = report;
    await expect(importWaveReport(h.db.db, { ...noSeed, id: "w-20200101T000000-s1" })).rejects.toThrow(/report\.seed/);
    await expect(importWaveReport(h.db.db, "not a report")).rejects.toThrow(/report/);
    expect(await count()).toBe(before);

    const imported = await importWaveReport(h.db.db, { ...report, id: "w-20200101T000000-s1" });
    expect(imported.id).toBe("w-20200101T000000-s1");
    const row = await h.db.db.chaosWave.findUniqueOrThrow({ where: { id: "w-20200101T000000-s1" }, include: { tasks: true } });
    expect(row).toMatchObject({ imported: true, passed: true });
    expect(row.tasks).toHaveLength(report.tasks.length);

    // A report made before R7 (docs/waves.md) still imports and loads: its R7 is absent (not run).
    const beforeR7 = { ...report, id: "w-20200101T000000-s2", tasks: report.tasks.map((t) => ({ ...t, checks: { R1: t.checks.R1, R2: t.checks.R2, R3: t.checks.R3, R4: t.checks.R4, R5: t.checks.R5, R6: t.checks.R6 } })) };
    await importWaveReport(h.db.db, beforeR7);
    const loaded = await loadWaveReport(h.db.db, "w-20200101T000000-s2");
    expect(loaded.tasks.every((t) => t.checks.R7 === undefined)).toBe(true);
    expect(loaded.passed).toBe(true);
  });
});
