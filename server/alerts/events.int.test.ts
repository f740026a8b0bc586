import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { recordBreakerChange } from "../controller/outage";
import { submitRun } from "../runs/submit";
import { servicesOf } from "../services";
import { storeWaveReport } from "../waves/store";
import type { WaveReport } from "../shared/wave-report";
import { startControllerHarness, waitFor, type ControllerHarness } from "../test/controller";
import { alertOrphanCost, alertRunFailed, emitRunEnded, orphanCostRate } from "./events";

/** The events' sources against PostgreSQL: one row per change however often it is reported, and deliveries by subscription. */

let h: ControllerHarness;
let all: string;
let wavesOnly: string;
let disabled: string;
let ends: string;
let succeededOnly: string;

beforeAll(async () => {
  h = await startControllerHarness();
  const mk = (name: string, events: string[], enabled = true) =>
    h.db.db.alertEndpoint.create({ data: { instanceId: "inst-a", name, url: `http://127.0.0.1:9/${name}`, secret: "whsec_c2VjcmV0c2VjcmV0c2VjcmV0", events, enabled, createdBy: "test" } });
  all = (await mk("all", [])).id;
  wavesOnly = (await mk("waves", ["wave.failed"])).id;
  disabled = (await mk("off", [], false)).id;
  ends = (await mk("ends", ["run.succeeded", "run.cancelled"])).id;
  succeededOnly = (await mk("succeeded", ["run.succeeded"])).id;
});
afterAll(() => h.close());

async function events(type: string) {
  return h.db.db.alertEvent.findMany({ where: { type }, include: { deliveries: true }, orderBy: { createdAt: "asc" } });
}

const reading = (open: boolean, since: string | null, confirmedAt: string | null = null, answeredAt: string | null = null) => ({
  open,
  unavailableSince: since,
  lastError: open ? "ECONNREFUSED" : null,
  nextProbeAt: null,
  probes: 1,
  confirmedAt,
  answeredAt,
});

describe("provider outage alerts (docs/alerts.md: a state with one owner)", () => {
  it("one outage seen by two controllers is one started and one ended alert, both keyed by the outage's id", async () => {
    // Paged at once once confirmed: the minimum duration is the pure tests' and the controllers' own.
    const [p, q] = [await h.controller({ outageAlertMinMs: 0 }), await h.controller({ outageAlertMinMs: 0 })];
    const since = new Date(Date.now() - 61_000).toISOString();
    await recordBreakerChange(p.ctx, { to: "open", since, error: "ECONNREFUSED" }, reading(true, since));
    await recordBreakerChange(q.ctx, { to: "open", since, error: "ECONNREFUSED" }, reading(true, since));
    // Not confirmed by a probe yet: nothing is paged.
    expect(await events("provider.outage_started")).toHaveLength(0);
    await recordBreakerChange(q.ctx, { to: "still_open", since, error: "ECONNREFUSED", probes: 2 }, reading(true, since, since));
    expect(await events("provider.outage_started")).toHaveLength(1);
    const at = new Date().toISOString();
    await recordBreakerChange(p.ctx, { to: "closed", since, at, probes: 3, by: "probe" }, reading(false, null, null, at));
    expect(await events("provider.outage_ended")).toHaveLength(0);
    await recordBreakerChange(q.ctx, { to: "closed", since, at, probes: 3, by: "call" }, reading(false, null, null, at));
    const [started] = await events("provider.outage_started");
    const [ended] = await events("provider.outage_ended");
    const outage = await h.db.db.providerOutage.findFirstOrThrow({ where: { instanceId: "inst-a" } });
    expect(started!.dedupeKey).toBe(`provider.outage_started:${outage.id}`);
    expect(ended!.dedupeKey).toBe(`provider.outage_ended:${outage.id}`);
    expect(started!.payload).toMatchObject({ type: "provider.outage_started", data: { outageId: outage.id, provider: "emulator", since, lastError: "ECONNREFUSED" } });
    expect(ended!.payload).toMatchObject({ type: "provider.outage_ended", data: { outageId: outage.id, controller: q.ctx.identity.bootId } });
    expect((ended!.payload as { data: { downSeconds: number } }).data.downSeconds).toBeGreaterThanOrEqual(61);
    expect((ended!.payload as { text: string }).text).toMatch(/back after 6\d s/);
    // Only the endpoint subscribed to every type, and enabled, gets them.
    expect(started!.deliveries.map((d) => d.endpointId)).toEqual([all]);
    // The controllers' rows say it as the breaker did; the outage keeps the verdicts that acted on it.
    const rows = await h.db.db.controllerProcess.findMany({ where: { bootId: { in: [p.ctx.identity.bootId, q.ctx.identity.bootId] } } });
    expect(rows.every((r) => r.providerUnavailableSince === null)).toBe(true);
    expect(outage.endedBy).toBe(q.ctx.identity.bootId);
    expect((outage.decisions as Array<{ verdict: { verdict: string } }>).map((d) => d.verdict.verdict)).toEqual(["open", "send_started", "end"]);
    await Promise.all([p.stop("test"), q.stop("test")]);
  });

  it("a breaker that opens and closes before a probe confirms it pages nothing", async () => {
    const p = await h.controller({ outageAlertMinMs: 0 });
    const since = new Date().toISOString();
    const before = (await events("provider.outage_started")).length;
    await recordBreakerChange(p.ctx, { to: "open", since, error: "ECONNRESET" }, reading(true, since));
    const at = new Date().toISOString();
    await recordBreakerChange(p.ctx, { to: "closed", since, at, probes: 1, by: "call" }, reading(false, null, null, at));
    expect(await events("provider.outage_started")).toHaveLength(before);
    expect(await h.db.db.providerOutage.count({ where: { instanceId: "inst-a", endedAt: null } })).toBe(0);
    await p.stop("test");
  });
});

describe("run alerts", () => {
  it("a failed run is one run.failed (and one run.recovery_exhausted when recovery gave up), however often written", async () => {
    const run = { id: "3f0c3b53-5f59-4c3e-8d0f-5b7b1f1e2a11", instanceId: "inst-a", companyId: "co-1", taskId: "t-1", agent: "planner", failureCode: "native_recovery_attempts_exhausted", failureDetail: "recovery failed 5 times", owner: "board", canRetry: true, nextAction: "Retry", recoveryAttempts: 5 };
    await Promise.all([alertRunFailed(h.db.db, run, true), alertRunFailed(h.db.db, run, true)]);
    await h.db.db.$transaction((tx) => alertRunFailed(tx, run, true));
    const failed = await h.db.db.alertEvent.findMany({ where: { dedupeKey: { in: [`run.failed:${run.id}`, `run.recovery_exhausted:${run.id}`] } }, include: { deliveries: true } });
    expect(failed.map((e) => e.type).sort()).toEqual(["run.failed", "run.recovery_exhausted"]);
    expect(failed.every((e) => e.deliveries.length === 1 && e.deliveries[0]!.endpointId === all)).toBe(true);
    expect((failed.find((e) => e.type === "run.recovery_exhausted")!.payload as { text: string }).text).toContain("recovery gave up after 5 attempts");
  });
});

describe("run endings, opt-in (docs/alerts.md: Run endings)", () => {
  const board = { id: "ana@example.com", role: "board" };
  const submit = (taskId: string, externalId?: string) => submitRun(h.db.db, "inst-a", { companyId: "co-1", taskId, agent: "planner", provider: "codex", sandboxMode: "warm", turns: 1, externalId }, board);

  /** Every ending event of one run, by the run id in its payload (whatever its dedupe key). */
  const endingsOf = (runId: string) =>
    h.db.db.alertEvent.findMany({ where: { type: { in: ["run.succeeded", "run.cancelled", "run.failed"] }, payload: { path: ["data", "runId"], equals: runId } }, include: { deliveries: true } });

  it("a run that succeeds is one run.succeeded, however often written, delivered only to the endpoints that named it", async () => {
    const r = await submit("ends-succeeded", "plat-ends-1");
    const c = await h.controller();
    c.start();
    const done = await waitFor("the run to succeed", async () => {
      const row = await h.db.db.run.findUniqueOrThrow({ where: { id: r.id } });
      return row.status === "succeeded" ? row : null;
    }, 30_000);
    await c.stop("test");
    // Written by the ending itself, in its transaction: there as soon as the run reads succeeded.
    const written = await endingsOf(r.id);
    expect(written.map((e) => e.type)).toEqual(["run.succeeded"]);
    // The ending written again (a retried transaction, another controller): no second event.
    await Promise.all([emitRunEnded(h.db.db, done), emitRunEnded(h.db.db, done)]);
    const ended = await endingsOf(r.id);
    expect(ended.map((e) => e.id)).toEqual(written.map((e) => e.id));
    const [event] = ended;
    expect(event!.dedupeKey).toBe(`run.succeeded:${r.id}`);
    expect(event!.payload).toMatchObject({
      type: "run.succeeded",
      id: event!.id,
      data: {
        runId: r.id,
        companyId: "co-1",
        taskId: "ends-succeeded",
        agent: "planner",
        externalId: "plat-ends-1",
        status: "succeeded",
        failureCode: null,
        createdAt: done.createdAt.toISOString(),
        startedAt: done.startedAt!.toISOString(),
        finishedAt: done.finishedAt!.toISOString(),
        url: `http://localhost:3000/runs/${r.id}`,
      },
    });
    // The default set (`all`) and a wave subscriber get none: only the endpoints that named it.
    expect(event!.deliveries.map((d) => d.endpointId).sort()).toEqual([ends, succeededOnly].sort());
  });

  it("a cancelled run is one run.cancelled, delivered only to the endpoint that named it; a second Cancel adds none", async () => {
    const r = await submit("ends-cancelled");
    const services = servicesOf(h.service());
    expect(await services.cancelRun({ all: true }, board, r.id, { reason: "not needed" })).toMatchObject({ result: "cancelled" });
    expect(await services.cancelRun({ all: true }, board, r.id, {})).toMatchObject({ result: "refused" });
    const ended = await endingsOf(r.id);
    expect(ended.map((e) => e.type)).toEqual(["run.cancelled"]);
    const row = await h.db.db.run.findUniqueOrThrow({ where: { id: r.id } });
    await emitRunEnded(h.db.db, row);
    expect((await endingsOf(r.id)).map((e) => e.id)).toEqual([ended[0]!.id]);
    expect(ended[0]!.dedupeKey).toBe(`run.cancelled:${r.id}`);
    expect(ended[0]!.payload).toMatchObject({ data: { runId: r.id, taskId: "ends-cancelled", externalId: null, status: "cancelled", failureCode: null, startedAt: null, finishedAt: row.finishedAt!.toISOString() } });
    expect(ended[0]!.deliveries.map((d) => d.endpointId)).toEqual([ends]);
  });

  it("a run cancelled by a bulk plan's item (its own transaction, runs/bulk-confirm.ts) is one run.cancelled too", async () => {
    const r = await submit("ends-bulk-cancelled");
    const services = servicesOf(h.service());
    const taken = await h.db.db.$transaction((tx) => services.cancelRunIn(tx, { all: true }, board, r.id, { planId: "plan-1" }));
    expect(taken.result).toBe("cancelled");
    const ended = await endingsOf(r.id);
    expect(ended.map((e) => [e.type, e.dedupeKey, e.deliveries.map((d) => d.endpointId)])).toEqual([["run.cancelled", `run.cancelled:${r.id}`, [ends]]]);
  });
});

describe("wave.failed", () => {
  const report = (id: string, passed: boolean): WaveReport => ({
    id,
    seed: 7,
    instanceId: "inst-a",
    companyId: "co-wave",
    startedAt: "2026-12-06T08:00:00.000Z",
    finishedAt: "2026-12-06T08:01:00.000Z",
    plan: { seed: 7, tasks: [], kills: [], concurrency: 2 },
    passed,
    orphanSandboxes: [],
    reclaims: [],
    decoys: [],
    events: [],
    tasks: [true, passed].map((ok, i) => ({
      id: `t0${i + 1}`,
      taskId: `${id}-t0${i + 1}`,
      passed: ok,
      restartCrossing: true,
      runs: [],
      failureCodes: [],
      retriesNeeded: 0,
      checks: Object.fromEntries(["R1", "R2", "R3", "R4", "R5", "R6"].map((c) => [c, { ok, detail: ok ? "fine" : "broken" }])) as WaveReport["tasks"][number]["checks"],
    })),
    kills: [],
    faults: [],
  });

  it("a wave that failed here alerts once, to every-type and wave subscribers; a passed or imported one does not", async () => {
    await storeWaveReport(h.db.db, report("w-20261206T080000-s7", false));
    await storeWaveReport(h.db.db, report("w-20261206T080000-s7", false));
    await storeWaveReport(h.db.db, report("w-20261206T090000-s7", true));
    await storeWaveReport(h.db.db, report("w-20261206T100000-s7", false), { imported: true });
    const waves = await events("wave.failed");
    expect(waves).toHaveLength(1);
    expect(waves[0]!.payload).toMatchObject({ data: { waveId: "w-20261206T080000-s7", tasks: 2, failedTasks: 1 } });
    expect(waves[0]!.deliveries.map((d) => d.endpointId).sort()).toEqual([all, wavesOnly].sort());
    expect(waves[0]!.deliveries.some((d) => d.endpointId === disabled)).toBe(false);
  });
});

describe("orphans.cost_over", () => {
  async function plant(rates: number[]) {
    await h.db.db.sandboxInventory.deleteMany({ where: { instanceId: "inst-a" } });
    await h.db.db.sandboxInventory.createMany({
      data: rates.map((r, i) => ({
        instanceId: "inst-a",
        sandboxId: `sb-${i}`,
        name: `rw-create-${i}`,
        labels: {},
        state: "started",
        createdAt: new Date(),
        cpu: 1,
        memory: 1,
        disk: 1,
        hourlyCost: r,
        verdict: "unrecorded",
        orphanSince: new Date(),
        accruedCost: 0,
        seenAt: new Date(),
      })),
    });
  }

  it("fires once per crossing of the threshold over the stored inventory, not per pass", async () => {
    let previous = 0;
    for (const [i, rates] of [[1, 2], [5, 6], [5, 7], [1], [6, 6]].entries()) {
      await plant(rates);
      const now = await orphanCostRate(h.db.db, "inst-a");
      await alertOrphanCost(h.db.db, { instanceId: "inst-a", previousRatePerHour: previous, ...now, thresholdPerHour: 10, passAt: new Date(Date.UTC(2026, 11, 6, 9, i)) });
      previous = now.ratePerHour;
    }
    const fired = await events("orphans.cost_over");
    expect(fired.map((e) => (e.payload as { data: { ratePerHour: number } }).data.ratePerHour)).toEqual([11, 12]);
    expect((fired[0]!.payload as { text: string }).text).toBe("Runwarden: orphaned sandboxes cost $11.00/h, over the $10.00/h threshold (2 orphans). http://localhost:3000/orphans");
  });
});
