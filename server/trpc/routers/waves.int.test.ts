import { TRPCError } from "@trpc/server";
import { beforeAll, describe, expect, it } from "vitest";
import { withTestDatabase } from "../../test/context";
import type { WaveReport } from "../../shared/wave-report";
import { createCaller } from "../root";
import { createTRPCContext } from "../trpc";
import { TEST_ADMIN } from "../../test/users";

const t = withTestDatabase();
const caller = () => createCaller(() => createTRPCContext({ user: TEST_ADMIN, headers: new Headers(), db: t.current.db }));

function check(ok: boolean) {
  return { ok, detail: ok ? "fine" : "broken" };
}

function report(id: string, r2: boolean[], codes: string[][]): WaveReport {
  const tasks = r2.map((ok, i) => ({
    id: `t0${i + 1}`,
    taskId: `${id}-t0${i + 1}`,
    passed: ok,
    restartCrossing: true,
    runs: [{ id: `r${i}`, status: "succeeded", failureCode: null, previousRunId: null, restarts: 1, createdAt: "2026-11-12T01:08:01.000Z", startedAt: null, finishedAt: "2026-11-12T01:08:05.000Z" }],
    failureCodes: codes[i] ?? [],
    retriesNeeded: ok ? 0 : 1,
    checks: { R1: check(true), R2: check(ok), R3: check(true), R4: check(true), R5: check(true), R6: check(true) },
  }));
  return {
    id,
    seed: 6402,
    instanceId: `wave-${id}`,
    companyId: "co-wave",
    startedAt: "2026-11-12T01:08:00.000Z",
    finishedAt: "2026-11-12T01:09:00.000Z",
    plan: { seed: 6402, tasks: [], kills: [], concurrency: 2 },
    passed: tasks.every((x) => x.passed),
    orphanSandboxes: [],
    reclaims: [],
    decoys: [],
    events: [],
    tasks,
    kills: [],
    faults: [],
  };
}

beforeAll(async () => {
  await caller().waves.import({ report: report("w-20261112T002811-s6402", [false, true, false, false, false, false], [["runner_harness_state_mismatch: resumed_unavailable"], [], ["runner_harness_state_mismatch: resumed_unavailable"]]) });
  await caller().waves.import({ report: report("w-20261112T010800-s6402", [true, true, true, false, false, false], [[], [], [], ["runner_ingress_bind_conflict"]]) });
});

describe("waves router", () => {
  it("lists waves newest first with their pass counts", async () => {
    const list = await caller().waves.list();
    expect(list.map((w) => [w.id, w.tasksPassed, w.tasks])).toEqual([
      ["w-20261112T010800-s6402", 3, 6],
      ["w-20261112T002811-s6402", 1, 6],
    ]);
  });

  it("compares two waves: 1 of 6 before, 3 of 6 after, and what changed", async () => {
    const c = await caller().waves.compare({ a: "w-20261112T002811-s6402", b: "w-20261112T010800-s6402" });
    expect([c.a.tasksPassed, c.b.tasksPassed]).toEqual([1, 3]);
    expect(c.changed).toEqual([
      { task: "t01", check: "R2", a: false, b: true },
      { task: "t03", check: "R2", a: false, b: true },
    ]);
    expect(c.codes).toEqual([
      { code: "runner_harness_state_mismatch: resumed_unavailable", a: 2, b: 0, change: "vanished" },
      { code: "runner_ingress_bind_conflict", a: 0, b: 1, change: "appeared" },
    ]);
  });

  it("gets one wave with its report, and NOT_FOUND for an unknown one", async () => {
    const w = await caller().waves.get({ id: "w-20261112T010800-s6402" });
    expect(w.report?.tasks).toHaveLength(6);
    const err = await caller().waves.get({ id: "w-nope" }).catch((e: unknown) => e);
    expect((err as TRPCError).code).toBe("NOT_FOUND");
  });

  it("refuses a duplicate or malformed import with the reason, and audits it", async () => {
    const dup = await caller().waves.import({ report: report("w-20261112T010800-s6402", [true], [[]]) }).catch((e: unknown) => e);
    expect((dup as TRPCError).code).toBe("CONFLICT");
    const bad = await caller().waves.import({ report: { id: "x" } }).catch((e: unknown) => e);
    expect((bad as TRPCError).code).toBe("BAD_REQUEST");
    expect((bad as TRPCError).message).toMatch(/^report\.id/);
    expect(await t.current.db.auditEntry.count({ where: { action: "wave.import", outcome: "refused" } })).toBe(2);
  });
});
