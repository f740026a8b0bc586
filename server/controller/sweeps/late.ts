import { Prisma, prepared, readRows, type SandboxCreationIntent } from "../../db/client";
import { isUuid } from "../../lib/ids";
import { inLanes } from "../../lib/lanes";
import { pagesById } from "../../lib/pages";
import type { SandboxRef } from "../../sandboxes/evidence";
import type { ControllerContext } from "../context";
import { judgeOwnership } from "../ownership";
import { json, proofData, recordProof } from "../records";
import type { HandedOverLease } from "../teardown";
import { count, type SweepSummary } from "./pass";
import { reclaimWrites } from "./reclaim-writes";

/**
 * Late materialisation (docs/rules.md §2.5): intents resolved absent are looked up again for a
 * window, and a sandbox that appeared after all is reclaimed with its ownership proof
 * (sweeps/reclaim-writes.ts) or left to an operator.
 */

/** How long after an intent resolved absent each sweep still looks for it (§2.5). */
export const LATE_MATERIALISATION_WINDOW_MS = 30 * 60_000;

/**
 * A create the provider finishes after the settle deadline (§2.5): for 30 minutes after an
 * intent resolved absent, each sweep looks its exact name up again. A sandbox that
 * appeared is reclaimed only with the ownership proof (the intent names it, labels match);
 * otherwise it goes to manual reconciliation untouched. Either way the proof is stored.
 */
export async function relookResolvedAbsent(ctx: ControllerContext, s: SweepSummary, toTearDown: Array<HandedOverLease>, companies?: string[]) {
  // On the database's clock, which wrote `resolved_at`; by the index of status and resolution
  // time (a pass reads the window's rows, not every intent that ever resolved absent).
  const pages = pagesById(
    (after) => {
      const sql = Prisma.sql`
          SELECT operation_id AS id, creation_name AS "creationName" FROM sandbox_creation_intents
          WHERE instance_id = ${ctx.config.instanceId} AND status = 'resolved_absent'::"IntentStatus"
            AND resolved_at >= now() - make_interval(secs => ${LATE_MATERIALISATION_WINDOW_MS / 1000})
            ${companies ? Prisma.sql`AND company_id = ANY(${companies})` : Prisma.empty}
            ${after === null ? Prisma.empty : Prisma.sql`AND operation_id > ${after}`}
          ORDER BY operation_id
          LIMIT ${ctx.config.pageSize}`;
      // Planned once per connection, but not for a company filter (whose selectivity varies).
      return readRows<Pick<SandboxCreationIntent, "id" | "creationName">>(ctx.db, companies ? sql : prepared(sql));
    },
    () => ctx.drain.signal.aborted,
  );
  for await (const page of pages) {
    s.pages += 1;
    await inLanes(page, ctx.config.sweepLanes, async (intent) => {
      let found;
      try {
        found = await ctx.provider.getByName(intent.creationName);
      } catch {
        return; // asked again on the next sweep, inside the window
      }
      if (!found || found.state === "destroyed" || found.state === "destroying") return;
      const claimed = await reclaimLate(ctx, intent.id, found, s);
      if (claimed) toTearDown.push(claimed);
    });
  }
}

/**
 * Judges a sandbox found late under its intent's lock, on the database's clock (which wrote
 * `resolved_at` and reads the window; the host's may be moved, §2.10).
 */
async function reclaimLate(ctx: ControllerContext, id: string, found: SandboxRef, s: SweepSummary): Promise<HandedOverLease | null> {
  return ctx.db.$transaction(async (tx) => {
    // The database's now() read with the lock (the transaction's start, as `judgeIntents` reads it).
    const rows = await tx.$queryRaw<Array<{ operation_id: string; now: Date }>>`
      SELECT operation_id, now() AS now FROM sandbox_creation_intents
      WHERE operation_id = ${id} AND status = 'resolved_absent'::"IntentStatus"
      FOR UPDATE SKIP LOCKED`;
    const now = rows[0]?.now;
    if (!now) return null;
    const intent = await tx.sandboxCreationIntent.findUniqueOrThrow({ where: { id } });
    const { evidence, verdict } = await judgeOwnership(tx, ctx.config.instanceId, found, { type: "intent", id });
    count(s, id, verdict);
    const runId = await existingRunId(tx, intent);
    const links = { intentId: id, runId, sandboxId: found.id };
    const lastInspection = { found: true, sandboxId: found.id, name: found.name, labels: found.labels, at: now.toISOString(), by: "late_materialisation" };
    if (verdict.verdict !== "owned") {
      await recordProof(tx, verdict, evidence, ctx.identity.bootId, links);
      await tx.sandboxCreationIntent.update({ where: { id }, data: { lastInspection: json(lastInspection), lastInspectedAt: now, attempts: { increment: 1 }, status: "manual_reconciliation", resolvedAt: now } });
      return null;
    }
    // The lease names the intent only when the intent has none yet (a committed one kept its own).
    const committed = await tx.environmentLease.count({ where: { intentId: id } });
    s.reclaimed += 1;
    const [claimed] = await reclaimWrites(tx, ctx, [
      {
        intent,
        proofs: [proofData(verdict, evidence, ctx.identity.bootId, links)],
        runId,
        leaseIntentId: committed === 0 ? id : null,
        sandboxId: found.id,
        cleanupStatus: "reclaimed_late_materialisation",
        lastInspection,
        nextAttemptAt: null,
        now,
      },
    ]);
    return claimed ?? null;
  });
}

async function existingRunId(tx: Prisma.TransactionClient, intent: SandboxCreationIntent): Promise<string | null> {
  // Probe and qualification acquires name runs that never existed.
  if (!isUuid(intent.runId)) return null;
  const run = await tx.run.findUnique({ where: { id: intent.runId }, select: { id: true } });
  return run?.id ?? null;
}
