import { judgeOrphanCost, type OrphanCostJudgement } from "../alerts/orphan-cost";
import { inventoryStale, refreshInventory } from "../sandboxes/inventory";
import { observerOf } from "../services/observer";
import type { ControllerContext } from "./context";

/**
 * orphans.cost_over from the controllers (docs/alerts.md): RUNWARDEN_ALERT_ORPHAN_COST_PER_HOUR
 * is a controller setting, so a controller's teardown sweep (§2.6, `sweepTeardown`) judges it,
 * whether or not anyone has the orphans page open. Off (no threshold): nothing is listed.
 *
 * The orphans are the inventory's (sandboxes/inventory.ts: this instance's sandboxes listed and
 * each judged by the ownership rules, §2.9). When it is older than `orphanCostPassMs` (or four
 * times its last pass) this sweep runs a pass itself — at most one at a time per instance, the
 * pass's advisory lock — then the crossing is judged on what is stored, once per crossing
 * (`crossedCostThreshold`, alerts/orphan-cost.ts), however many sweeps and controllers see it.
 */
export async function checkOrphanCost(ctx: ControllerContext, now = new Date()): Promise<OrphanCostJudgement | null> {
  const threshold = ctx.config.orphanCostPerHour;
  if (threshold === null) return null;
  const instanceId = ctx.config.instanceId;
  const last = await ctx.db.sandboxInventoryPass.findUnique({ where: { instanceId }, select: { listedAt: true, tookMs: true } });
  // A pass that gave way (another is running, or a newer one is stored) leaves the stored one to judge.
  if (inventoryStale(last, now, ctx.config.orphanCostPassMs)) await refreshInventory(ctx.db, observerOf(ctx), instanceId, now);
  const judged = await judgeOrphanCost(ctx.db, instanceId, threshold);
  if (judged?.crossed) ctx.log.warn({ ratePerHour: judged.ratePerHour, thresholdPerHour: threshold, orphans: judged.orphans }, "orphaned sandboxes' cost crossed the threshold: orphans.cost_over");
  return judged;
}
