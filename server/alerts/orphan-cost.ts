import type { Db } from "../db/client";
import { crossedCostThreshold } from "../engine/alerts";
import { alertOrphanCost, orphanCostRate } from "./events";

/**
 * orphans.cost_over (docs/alerts.md), judged on the orphans inventory as stored
 * (`sandbox_inventory`, written by every inventory pass: a controller's, or the orphans page's)
 * against the rate the previous judgement saw, kept on the instance's pass row
 * (`alert_rate_per_hour`). The state is the judgement's own, not the inventory's: a pass that
 * judges nothing (a dashboard without the threshold) cannot swallow a crossing, and two
 * controllers judging one inventory are serialised by the row lock, so one crossing is one
 * event (its dedupe key names the inventory judged).
 */

export interface OrphanCostJudgement {
  /** The inventory judged (its listing time). */
  listedAt: Date;
  previousRatePerHour: number;
  ratePerHour: number;
  orphans: number;
  /** `crossedCostThreshold`: an event was written (or already was, by its dedupe key). */
  crossed: boolean;
}

/** Null when there is no inventory yet to judge. A first judgement starts from 0 USD/h: orphans already over the threshold alert once. */
export async function judgeOrphanCost(db: Db, instanceId: string, thresholdPerHour: number): Promise<OrphanCostJudgement | null> {
  return db.$transaction(async (tx) => {
    const [pass] = await tx.$queryRaw<Array<{ listed_at: Date; alert_rate_per_hour: number | null }>>`
      SELECT listed_at, alert_rate_per_hour FROM sandbox_inventory_passes WHERE instance_id = ${instanceId} FOR UPDATE`;
    if (!pass) return null;
    const now = await orphanCostRate(tx, instanceId);
    const previousRatePerHour = pass.alert_rate_per_hour ?? 0;
    await alertOrphanCost(tx, { instanceId, previousRatePerHour, ...now, thresholdPerHour, passAt: pass.listed_at });
    await tx.$executeRaw`UPDATE sandbox_inventory_passes SET alert_rate_per_hour = ${now.ratePerHour} WHERE instance_id = ${instanceId}`;
    return { listedAt: pass.listed_at, previousRatePerHour, ...now, crossed: crossedCostThreshold(previousRatePerHour, now.ratePerHour, thresholdPerHour) };
  });
}
