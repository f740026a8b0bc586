import { z } from "zod";
import type { Db } from "./db/client";
import { describeFailure } from "./engine";
import { companyWhere, type CompanyScope } from "./shared/roles";
import { awaitingRetryByCode, runStatusCounts, runStatusCountsOutput } from "./runs/queries";
import { healthOutput, readHealth } from "./health";
import { countStuck, stuckCountsSchema } from "./runs/stuck";
import { listOrphans } from "./sandboxes/list";
import type { Observer } from "./services/observer";
import { OWNERSHIP_VERDICTS } from "./shared/confirm";
import { latestWave, waveListItemSchema } from "./waves/queries";

/**
 * The overview's read model: what needs someone's attention now, each part counted so the
 * page can link to the filtered list that shows it. Read per request; nothing is cached.
 */

export const overviewInput = z.object({}).strict().default({});

export const overviewOutput = z.object({
  at: z.date(),
  runs: runStatusCountsOutput,
  /** Terminal failures that offer Retry and were not retried yet, by code (most first). */
  awaitingRetry: z.array(z.object({ code: z.string(), count: z.number().int(), message: z.string(), nextAction: z.string() })),
  /** Pending creation intents of this instance whose wait is over (nextAttemptAt passed). */
  overdueIntents: z.object({ count: z.number().int(), oldestDueAt: z.date().nullable() }),
  /**
   * This instance's orphaned sandboxes and what they cost, as of the orphans inventory's last
   * pass; null with `orphansError` when the provider could not be listed for a first one.
   */
  orphans: z
    .object({
      count: z.number().int(),
      /** When the provider was listed for these figures. */
      listedAt: z.date(),
      /** USD per hour, all orphans. */
      hourlyCost: z.number(),
      byVerdict: z.record(z.enum(OWNERSHIP_VERDICTS), z.number().int()),
    })
    .nullable(),
  /** Why there are no figures, or why they are older than they should be (the last inventory pass failed). */
  orphansError: z.string().nullable(),
  lastWave: waveListItemSchema.nullable(),
  /** Controllers running, and the provider as they see it (§2.8). */
  health: healthOutput,
  /** Live runs that are not moving, by reason (docs/rules.md §4, "Stuck runs"; a run may count under several). */
  stuck: stuckCountsSchema,
});
export type Overview = z.infer<typeof overviewOutput>;

export async function getOverview(db: Db, observer: Observer, scope: CompanyScope, instanceId: string, now = new Date()): Promise<Overview> {
  const mine = companyWhere(scope);
  const [runs, retryGroups, overdue, orphans, lastWave, health, stuck] = await Promise.all([
    runStatusCounts(db, scope),
    awaitingRetryByCode(db, scope),
    db.sandboxCreationIntent.aggregate({
      where: { AND: [mine, { instanceId, status: "pending", nextAttemptAt: { lte: now } }] },
      _count: { _all: true },
      _min: { nextAttemptAt: true },
    }),
    // The provider may be away; the rest of the overview is still worth showing.
    // Only the counts are read: one row is judged.
    listOrphans(db, observer, scope, instanceId, { pageSize: 1 }, now).then(
      (list) => ({ ok: true as const, list }),
      (err: unknown) => ({ ok: false as const, error: err instanceof Error ? err.message : String(err) }),
    ),
    latestWave(db, scope),
    readHealth(db, scope, instanceId),
    countStuck(db, scope),
  ]);
  const awaitingRetry = retryGroups
    .flatMap((g) => {
      const entry = describeFailure(g.code);
      return entry ? [{ code: entry.code, count: g.count, message: entry.message, nextAction: entry.nextAction }] : [];
    })
    .sort((a, b) => b.count - a.count || a.code.localeCompare(b.code));
  return {
    at: now,
    runs,
    awaitingRetry,
    overdueIntents: { count: overdue._count._all, oldestDueAt: overdue._min.nextAttemptAt },
    orphans: orphans.ok ? { count: orphans.list.totals.count, hourlyCost: orphans.list.totals.hourlyCost, byVerdict: orphans.list.byVerdict, listedAt: orphans.list.listedAt } : null,
    orphansError: orphans.ok ? orphans.list.inventory.error : orphans.error,
    lastWave,
    health,
    stuck,
  };
}
