import type { Db } from "./client";

/**
 * Folds the rollup tables' deltas (`run_rollups`, `intent_rollups`: the triggers only insert,
 * so no writer waits on another's open transaction) into one row per group. The counts read
 * the same before and after; only the rows a read sums shrink. One compaction runs at a time
 * across every controller of the database (an advisory lock: the others fold nothing).
 */
export async function compactRollups(db: Db): Promise<{ runRows: number; intentRows: number }> {
  const [runs] = await db.$queryRaw<Array<{ n: number }>>`SELECT run_rollups_compact() AS n`;
  const [intents] = await db.$queryRaw<Array<{ n: number }>>`SELECT intent_rollups_compact() AS n`;
  return { runRows: runs?.n ?? 0, intentRows: intents?.n ?? 0 };
}
