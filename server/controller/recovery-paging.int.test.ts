import crypto from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { currentProcessIdentity } from "../process/identity";
import { claimInterruptedRuns } from "./recovery";
import { startControllerHarness, type ControllerHarness } from "./testing";

/** §2.8: interrupted runs are found by paging with a stable cursor — no number of healthy runs hides one. */

let h: ControllerHarness;
beforeAll(async () => {
  h = await startControllerHarness();
});
afterAll(() => h.close());

const uuid = (prefix: string, n: number) => `${prefix}${String(n).padStart(4, "0")}-0000-4000-8000-000000000000`;

describe("run recovery paging", () => {
  it("finds the one interrupted run behind 250 active runs of a live executor", async () => {
    const { db } = h.db;
    const me = currentProcessIdentity();
    await db.instance.upsert({ where: { id: "inst-a" }, create: { id: "inst-a", name: "a" }, update: {} });
    const process = (bootId: string, stopped: boolean) => ({
      bootId,
      instanceId: "inst-a",
      pid: me.pid,
      startedAt: new Date(me.startedAt),
      startTicks: me.startTicks === null ? null : BigInt(me.startTicks),
      hostname: me.hostname,
      pidSpace: me.pidSpace,
      stoppedAt: stopped ? new Date() : null,
      stopReason: stopped ? "drain" : null,
    });
    // A live executor: this very process under another boot id (alive, same_process).
    const live = `live-${crypto.randomUUID()}`;
    const drained = `drained-${crypto.randomUUID()}`;
    await db.controllerProcess.createMany({ data: [process(live, false), process(drained, true)] });
    const base = { instanceId: "inst-a", companyId: "co-1", agent: "a", provider: "codex", target: "remote" as const, sandboxMode: "warm" as const, status: "running" as const };
    // Ids sort the healthy runs first: the interrupted one is past any single page of 200.
    await db.run.createMany({ data: Array.from({ length: 250 }, (_, i) => ({ ...base, id: uuid("0000", i), taskId: `healthy-${i}`, executorBootId: live })) });
    const interrupted = await db.run.create({ data: { ...base, id: "ffffffff-0000-4000-8000-000000000000", taskId: "interrupted", executorBootId: drained } });

    const service = h.service();
    const claimed = await claimInterruptedRuns(service, 4);
    expect(claimed.map((c) => c.run.id)).toEqual([interrupted.id]);
    expect(claimed[0]!.status).toMatchObject({ gone: true, restartKind: "graceful" });
    // The live executor keeps every one of its runs.
    expect(await db.run.count({ where: { executorBootId: live } })).toBe(250);
  }, 60_000);
});
