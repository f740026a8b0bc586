import crypto from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildLabels } from "../providers/labels";
import { refreshInventory } from "../sandboxes/inventory";
import { servicesOf } from "../services";
import { controllerProcesses } from "../test/controller-process";
import { startControllerHarness, waitFor, type ControllerHarness } from "../test/controller";

/**
 * orphans.cost_over from the controllers (docs/alerts.md): RUNWARDEN_ALERT_ORPHAN_COST_PER_HOUR
 * is a controller setting, and the controller's teardown sweep (§2.6) judges it — with no
 * dashboard request at all — once per crossing, however many sweeps see it over.
 */

let h: ControllerHarness;
beforeAll(async () => {
  h = await startControllerHarness();
});
afterAll(() => h.close());

const { controller } = controllerProcesses(() => h);

/** Sandboxes of this instance with no record (orphans, `unrecorded`): each 4 vCPU, 8 GiB, 10 GiB ≈ $0.33/h. */
async function plantOrphans(n: number, companyId: string): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const box = await h.emu.admin.plant({ name: `rw-orphan-${crypto.randomBytes(4).toString("hex")}`, labels: buildLabels({ instanceId: "inst-a", companyId, runId: crypto.randomUUID() }), cpu: 4, memory: 8, disk: 10 });
    ids.push(box.id);
  }
  return ids;
}

/** No sandbox, no inventory, no cost alert: each test starts from nothing. */
async function reset() {
  await h.emu.admin.reset();
  await h.db.db.alertEvent.deleteMany({ where: { type: "orphans.cost_over" } });
  await h.db.db.sandboxInventory.deleteMany({});
  await h.db.db.sandboxInventoryPass.deleteMany({});
}

const costAlerts = () => h.db.db.alertEvent.findMany({ where: { type: "orphans.cost_over" }, orderBy: { createdAt: "asc" } });
const teardownSweeps = () => h.db.db.sweepPass.count({ where: { kind: "teardown", instanceId: "inst-a", finishedAt: { not: null } } });

describe("orphans.cost_over raised by a controller", () => {
  it("a controller process with the threshold set, no dashboard: its sweep raises exactly one alert for the crossing, later sweeps none", async () => {
    await reset();
    await plantOrphans(2, "co-orphans");
    await controller({ RUNWARDEN_ALERT_ORPHAN_COST_PER_HOUR: "0.5" });
    const [event] = await waitFor("an orphans.cost_over event", async () => {
      const found = await costAlerts();
      return found.length > 0 && found;
    });
    expect(event!.payload).toMatchObject({ type: "orphans.cost_over", data: { thresholdPerHour: 0.5, orphans: 2, previousRatePerHour: 0 } });
    expect((event!.payload as { data: { ratePerHour: number } }).data.ratePerHour).toBeCloseTo(0.66456, 5);
    // Three more sweeps of this controller after the one that raised it: still one.
    const seen = await teardownSweeps();
    await waitFor("three more teardown sweeps", async () => (await teardownSweeps()) >= seen + 3);
    expect(await costAlerts()).toHaveLength(1);
  }, 60_000);

  it("one alert per crossing: not one per sweep that lists the provider again, not swallowed by a dashboard's pass, and again after the cost fell under and rose over", async () => {
    await reset();
    const c = await h.controller({ orphanCostPerHour: 0.5, orphanCostPassMs: 0 });
    const crossings = async () => (await costAlerts()).map((e) => (e.payload as { data: { previousRatePerHour: number; ratePerHour: number } }).data);
    const listedAt = async () => (await h.db.db.sandboxInventoryPass.findUnique({ where: { instanceId: "inst-a" } }))?.listedAt.getTime() ?? 0;
    /** Sweeps until one lists the provider again (a pass is due once the last is older than 4 times what it took). */
    const sweepWithNewPass = async () => {
      const before = await listedAt();
      await waitFor("a sweep with a new inventory pass", async () => {
        await c.sweep("test");
        return (await listedAt()) > before;
      });
    };

    // Under the threshold: one orphan, $0.33/h.
    await plantOrphans(1, "co-cross");
    await sweepWithNewPass();
    expect(await costAlerts()).toHaveLength(0);
    // Over it — and the orphans page's pass stores the new inventory first: it raises nothing, and swallows nothing.
    const [second] = await plantOrphans(1, "co-cross");
    await refreshInventory(h.db.db, servicesOf(h.service()).observer, "inst-a");
    expect(await costAlerts()).toHaveLength(0);
    await c.sweep("test");
    expect(await crossings()).toEqual([expect.objectContaining({ previousRatePerHour: expect.closeTo(0.33228, 5), ratePerHour: expect.closeTo(0.66456, 5) })]);
    // Still over, sweep after sweep, each on a new listing: no second alert.
    await sweepWithNewPass();
    await sweepWithNewPass();
    expect(await costAlerts()).toHaveLength(1);

    // Under again (an orphan destroyed), then over again: a second crossing, a second alert.
    await h.emu.provider({ instanceId: "inst-a" }).destroy(second!);
    await sweepWithNewPass();
    expect((await h.db.db.sandboxInventoryPass.findUniqueOrThrow({ where: { instanceId: "inst-a" } })).alertRatePerHour).toBeCloseTo(0.33228, 5);
    expect(await costAlerts()).toHaveLength(1);
    await plantOrphans(1, "co-cross");
    await sweepWithNewPass();
    await sweepWithNewPass();
    expect((await crossings()).map((x) => x.ratePerHour)).toEqual([expect.closeTo(0.66456, 5), expect.closeTo(0.66456, 5)]);
  }, 60_000);

  it("no threshold: the sweep lists nothing for it and raises nothing", async () => {
    await reset();
    await plantOrphans(3, "co-off");
    const c = await h.controller({ orphanCostPassMs: 0 });
    await c.sweep("test");
    expect(await h.db.db.sandboxInventoryPass.count()).toBe(0);
    expect(await costAlerts()).toHaveLength(0);
  }, 30_000);
});
