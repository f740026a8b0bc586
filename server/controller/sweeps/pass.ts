import crypto from "node:crypto";
import { z } from "zod";
import { Prisma, prepared, readRows } from "../../db/client";
import type { Verdict } from "../../engine";
import type { ControllerContext } from "../context";
import type { TeardownOutcome } from "../teardown";

/**
 * A sweep pass's bookkeeping (docs/rules.md §2.5, §2.6): its row in `sweep_passes`, written at
 * its start and closed with what it decided, and the summary it counts into. The row's times
 * are the database's clock, as the rest of the sweep's.
 */

/** What one sweep pass decided: the controller's answer, the tRPC output and the audit detail. */
export const sweepSummarySchema = z.object({
  kind: z.enum(["creation_intents", "teardown"]),
  passId: z.string(),
  judged: z.number().int(),
  pages: z.number().int(),
  verdicts: z.record(z.string(), z.number().int()),
  reclaimed: z.number().int(),
  destroyed: z.number().int(),
  decisions: z.array(z.object({ id: z.string(), verdict: z.string(), reason: z.string().nullable() })),
});
export type SweepSummary = z.infer<typeof sweepSummarySchema>;

export function summary(kind: SweepSummary["kind"], passId: string): SweepSummary {
  return { kind, passId, judged: 0, pages: 0, verdicts: {}, reclaimed: 0, destroyed: 0, decisions: [] };
}

export function count(s: SweepSummary, id: string, verdict: Verdict | { verdict: string; reason: string | null }) {
  s.judged += 1;
  s.verdicts[verdict.verdict] = (s.verdicts[verdict.verdict] ?? 0) + 1;
  if (s.decisions.length < 500) s.decisions.push({ id, verdict: verdict.verdict, reason: verdict.reason });
}

export function countDestroyed(s: SweepSummary, results: readonly TeardownOutcome[]) {
  for (const r of results) if (r.outcome === "destroyed" || r.outcome === "already_gone") s.destroyed += 1;
}

/**
 * The pass's row, written at its start (straight to the pool, `readRows`: a pass is a few
 * statements, and at a small backlog its fixed round trips were most of it).
 */
export async function openPass(ctx: ControllerContext, kind: SweepSummary["kind"], trigger: string, id: string = crypto.randomUUID()): Promise<string> {
  await readRows(ctx.db, prepared(Prisma.sql`WITH pass AS (${passRow(ctx, id, kind, trigger)}) SELECT 1`));
  return id;
}

/** The INSERT of a pass's row, for a statement's WITH (a data-modifying CTE runs whether read or not). */
export function passRow(ctx: ControllerContext, id: string, kind: SweepSummary["kind"], trigger: string): Prisma.Sql {
  return Prisma.sql`INSERT INTO sweep_passes (id, kind, instance_id, boot_id, trigger, started_at)
    VALUES (${id}::uuid, ${kind}, ${ctx.config.instanceId}, ${ctx.identity.bootId}, ${trigger}, now())
    ON CONFLICT (id) DO NOTHING`;
}

export async function closePass(ctx: ControllerContext, s: SweepSummary, error: string | null) {
  await readRows(
    ctx.db,
    prepared(Prisma.sql`
      UPDATE sweep_passes SET finished_at = now(), judged = ${s.judged}, pages = ${s.pages}, verdicts = ${JSON.stringify(s.verdicts)}::jsonb,
        reclaimed = ${s.reclaimed}, destroyed = ${s.destroyed}, error = ${error}
      WHERE id = ${s.passId}::uuid`),
  );
}
