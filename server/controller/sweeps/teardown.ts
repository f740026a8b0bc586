import { databaseNow } from "../../db/clock";
import { asIdentity, type TeardownFenceEvidence } from "../../engine";
import { inLanes } from "../../lib/lanes";
import { pagesById } from "../../lib/pages";
import type { ControllerContext } from "../context";
import { evidenceIdentity } from "../context";
import { probeFor } from "../observe";
import { checkOrphanCost } from "../orphan-cost";
import { recordProof } from "../records";
import { teardownFence } from "../rules";
import { teardownLease, type TeardownOutcome } from "../teardown";
import { closePass, count, openPass, summary, type SweepSummary } from "./pass";

/**
 * The teardown sweep (docs/rules.md §2.6): fences whose claimer exited are released, a
 * finished run's active leases go to cleanup, and every due pending_cleanup lease is torn
 * down (controller/teardown.ts), a page at a time in id order, each under its own claim.
 */

export async function sweepTeardown(ctx: ControllerContext, trigger = "interval", companies?: string[]): Promise<SweepSummary> {
  const s = summary("teardown", await openPass(ctx, "teardown", trigger));
  let error: string | null = null;
  try {
    await releaseLostFences(ctx, s, companies);
    await queueLeasesOfFinishedRuns(ctx, companies);
    await tearDownDue(ctx, s, companies);
    // What the orphans cost, instance-wide (orphan-cost.ts): not for a sweep of some companies only.
    if (!companies) await checkOrphanCost(ctx).catch((err: unknown) => ctx.log.error({ err: String(err) }, "orphan cost check failed"));
  } catch (err) {
    error = err instanceof Error ? err.message : String(err);
    ctx.log.error({ err: error }, "teardown sweep failed");
  }
  await closePass(ctx, s, error);
  return s;
}

/** Ends the fence of a claim whose claimer exited, unless a newer claim superseded it. */
async function releaseLostFences(ctx: ControllerContext, s: SweepSummary, companies?: string[]) {
  const pages = pagesById((after) =>
    ctx.db.environmentLease.findMany({
      where: { instanceId: ctx.config.instanceId, status: "pending_cleanup", fencedUntil: { not: null }, ...(companies ? { companyId: { in: companies } } : {}), ...(after ? { id: { gt: after } } : {}) },
      orderBy: { id: "asc" },
      take: ctx.config.pageSize,
      select: { id: true },
    }),
  );
  // The database's clock, which wrote the fences and the heartbeats (§2.10).
  const now = (await databaseNow(ctx.db)).toISOString();
  for await (const page of pages) {
    s.pages += 1;
    for (const { id } of page) {
      await ctx.db.$transaction(async (tx) => {
        const locked = await tx.$queryRaw<Array<{ id: string }>>`
          SELECT id FROM environment_leases WHERE id = ${id}::uuid AND fenced_until IS NOT NULL FOR UPDATE SKIP LOCKED`;
        if (locked.length === 0) return;
        const lease = await tx.environmentLease.findUniqueOrThrow({ where: { id } });
        const record = (lease.claimRecord ?? null) as { attemptId?: string; claimer?: unknown } | null;
        const claimer = asIdentity(record?.claimer);
        const controller = claimer?.bootId ? await tx.controllerProcess.findUnique({ where: { bootId: claimer.bootId }, select: { bootId: true, stoppedAt: true, lastSeenAt: true } }) : null;
        const raw: TeardownFenceEvidence = {
          kind: "teardown_fence",
          now,
          lease: { status: lease.status, claimAttemptId: lease.claimAttemptId, fencedUntil: lease.fencedUntil?.toISOString() ?? null },
          claimRecord: record?.attemptId ? { attemptId: record.attemptId, claimer } : null,
          observer: evidenceIdentity(ctx.identity),
          claimerProbe: probeFor(ctx, claimer),
          claimerHeartbeat: controller
            ? { bootId: controller.bootId, stoppedAt: controller.stoppedAt?.toISOString() ?? null, lastSeenAt: controller.lastSeenAt.toISOString(), silenceWindowMs: ctx.config.executorTimeoutMs }
            : null,
        };
        const { evidence, verdict } = teardownFence(ctx.config, raw);
        count(s, id, verdict);
        if (verdict.verdict !== "release") return;
        await recordProof(tx, verdict, evidence, ctx.identity.bootId, { leaseId: id, runId: lease.runId, sandboxId: lease.providerLeaseId });
        await tx.environmentLease.update({ where: { id }, data: { fencedUntil: null, nextCleanupAt: null, cleanupStatus: `fence_released:${verdict.reason}` } });
      });
    }
  }
}

/** A finished run holds nothing (chaos check R5): its active leases go to cleanup. */
async function queueLeasesOfFinishedRuns(ctx: ControllerContext, companies?: string[]) {
  await ctx.db.environmentLease.updateMany({
    where: { instanceId: ctx.config.instanceId, status: "active", ...(companies ? { companyId: { in: companies } } : {}), run: { status: { in: ["succeeded", "failed", "cancelled"] } } },
    data: { status: "pending_cleanup", cleanupStatus: "run_finished" },
  });
}

async function tearDownDue(ctx: ControllerContext, s: SweepSummary, companies?: string[]) {
  const now = await databaseNow(ctx.db);
  const pages = pagesById(
    (after) =>
      ctx.db.environmentLease.findMany({
        where: {
          instanceId: ctx.config.instanceId,
          status: "pending_cleanup",
          ...(companies ? { companyId: { in: companies } } : {}),
          OR: [{ fencedUntil: null }, { fencedUntil: { lte: now } }],
          AND: [{ OR: [{ nextCleanupAt: null }, { nextCleanupAt: { lte: now } }] }],
          ...(after ? { id: { gt: after } } : {}),
        },
        orderBy: { id: "asc" },
        take: ctx.config.pageSize,
        select: { id: true },
      }),
    () => ctx.drain.signal.aborted,
  );
  for await (const page of pages) {
    s.pages += 1;
    await inLanes(page, ctx.config.sweepLanes, async ({ id }) => {
      const result: TeardownOutcome = await teardownLease(ctx, id);
      if (result.outcome === "not_claimed") return;
      count(s, id, { verdict: result.outcome, reason: "reason" in result ? result.reason : null });
      if (result.outcome === "destroyed" || result.outcome === "already_gone") s.destroyed += 1;
    });
  }
}
