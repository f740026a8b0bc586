import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startControllerHarness, type ControllerHarness } from "../controller/testing";
import { readEnv } from "../env";
import type { PlannedTask, WavePlan } from "./plan";
import type { WaveReport } from "./report";
import { runWave, type WaveRunOptions } from "./runner";
import { importWaveReport, loadWaveReport } from "./store";

/**
 * Whole waves with real controller processes against the emulator. Small hand-written
 * plans keep each wave to seconds; the seeded plans are exercised by `npm run wave`.
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
  return runWave({
    env: readEnv({ DATABASE_URL: h.db.url, RUNWARDEN_DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), "rw-wave-")) }),
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
  });
}

function failing(report: WaveReport) {
  return report.tasks.flatMap((t) => Object.entries(t.checks).filter(([, c]) => !c.ok).map(([id, c]) => `${t.id} ${id}: ${c.detail}`));
}

describe("waves pass on the current engine", () => {
  it.each([
    ["K1", {}],
    ["K2", {}],
    // K4 inside a teardown claim is covered with real processes in controller/restart.int.test.ts.
    ["K4", { crashAt: "after_create" as const }],
    ["K15", {}],
  ] as const)("%s alone %o", { timeout: 120_000 }, async (kind, extra) => {
    const report = await wave({
      tasks: [task("t01"), task("t02", { sandboxMode: "per_turn" }), task("t03", { turns: 2 })],
      kills: [{ kind, atMs: 900, ...extra }],
      concurrency: 2,
    });
    expect(failing(report)).toEqual([]);
    expect(report.passed).toBe(true);
    expect(report.events.some((e) => e.kind === "kill" && e.detail.startsWith(kind))).toBe(true);
    expect(report.orphanSandboxes).toEqual([]);
    expect(report.decoys.every((d) => d.intact)).toBe(true);
  });

  it("all kills and all faults together", { timeout: 180_000 }, async () => {
    const report = await wave({
      tasks: [
        task("t01", { faults: ["bind"] }),
        task("t02", { sandboxMode: "per_turn", faults: ["reject"] }),
        task("t03", { faults: ["late"] }),
        task("t04", { sandboxMode: "per_turn", faults: ["unconnected"], target: "local" }),
        task("t05", { provider: "claude" }),
        task("t06", { sandboxMode: "per_turn", provider: "claude" }),
      ],
      kills: [
        { kind: "K1", atMs: 800 },
        { kind: "K4", atMs: 2500, crashAt: "after_create" },
        { kind: "K15", atMs: 5000 },
        { kind: "K2", atMs: 7500 },
      ],
      concurrency: 2,
    });
    expect(failing(report)).toEqual([]);
    expect(report.passed).toBe(true);
    const codes = report.tasks.flatMap((t) => t.failureCodes);
    expect(codes).toContain("native_provider_startup_rejected");
    expect(codes).toContain("runner_ingress_bind_conflict");
    expect(report.tasks.find((t) => t.id === "t02")!.retriesNeeded).toBe(1);
    expect(report.tasks.some((t) => t.restartCrossing)).toBe(true);

    const stored = await loadWaveReport(h.db.db, report.id);
    expect(stored.tasks).toHaveLength(6);
    const rows = await h.db.db.chaosWaveTask.findMany({ where: { waveId: report.id }, include: { checks: true } });
    expect(rows.every((r) => r.checks.length === 6)).toBe(true);
  });
});

describe("a deliberately broken rule makes the matching check fail", () => {
  it("staged restarts admitted only on resumed leases (seed 000's bug) → R2", { timeout: 120_000 }, async () => {
    const report = await wave(
      { tasks: [task("t01", { sandboxMode: "per_turn", turns: 6 }), task("t02", { sandboxMode: "per_turn", turns: 6 })], kills: [{ kind: "K2", atMs: 1500 }], concurrency: 2 },
      { breakRule: "staged_requires_resumed" },
    );
    expect(report.passed).toBe(false);
    const r2 = report.tasks.filter((t) => !t.checks.R2.ok);
    expect(r2.length).toBeGreaterThan(0);
    expect(r2[0]!.checks.R2.detail).toMatch(/lease_binding recorded refused, the rules give admitted/);
  });

  it("a creator's exit ignored (before seed 003) → R4", { timeout: 120_000 }, async () => {
    const report = await wave(
      { tasks: [task("t01", { turns: 2 }), task("t02", { turns: 2 }), task("t03", { turns: 2 })], kills: [{ kind: "K4", atMs: 300, crashAt: "after_create" }], concurrency: 1 },
      { breakRule: "skip_creator_exit", timeoutMs: 40_000, quiesceMs: 4_000 },
    );
    expect(report.passed).toBe(false);
    expect(report.orphanSandboxes.length).toBeGreaterThan(0);
    expect(report.tasks.some((t) => !t.checks.R4.ok)).toBe(true);
  });

  it("a lost teardown claim's fence kept (before seed 003) → R5", { timeout: 120_000 }, async () => {
    const report = await wave(
      { tasks: [task("t01", { turns: 2 }), task("t02", { turns: 3 })], kills: [{ kind: "K4", atMs: 300, crashAt: "during_teardown_claim" }], concurrency: 1 },
      { breakRule: "keep_lost_fences", timeoutMs: 40_000, quiesceMs: 4_000 },
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
  });
});
