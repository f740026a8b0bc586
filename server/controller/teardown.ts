import { databaseNow } from "../db/clock";
import crypto from "node:crypto";
import { prepared, Prisma, readRows, type EnvironmentLease } from "../db/client";
import type { SandboxOwnershipResult } from "../engine";
import { ProviderError } from "../providers/errors";
import type { SandboxView } from "../providers/types";
import type { ControllerContext } from "./context";
import { evidenceIdentity } from "./context";
import { crashPoint } from "./crash";
import { describeOwnership } from "../sandboxes/evidence";
import { judgeOwnership } from "./ownership";
import { appendEvents, json, recordProof } from "./records";

export type TeardownOutcome =
  | { outcome: "destroyed" | "already_gone"; leaseId: string }
  | { outcome: "not_claimed"; leaseId: string }
  | { outcome: "refused"; leaseId: string; reason: string }
  | { outcome: "failed"; leaseId: string; error: string };

/**
 * Claims a pending-cleanup lease for teardown (docs/rules.md §2.6): a new attempt id, this
 * controller's identity, and a fence. One conditional UPDATE, so of several controllers
 * exactly one wins; a fenced lease or one not yet due is not claimed. The claimed lease comes
 * back from the same statement (no second read).
 */
export async function claimLease(ctx: ControllerContext, leaseId: string, at?: Date): Promise<{ attemptId: string; lease: EnvironmentLease } | null> {
  // Fences are written and judged on the database's clock: the next claimer may be another host.
  const now = at ?? (await databaseNow(ctx.db));
  const attemptId = crypto.randomUUID();
  const [lease] = await ctx.db.environmentLease.updateManyAndReturn({
    where: {
      id: leaseId,
      status: "pending_cleanup",
      OR: [{ fencedUntil: null }, { fencedUntil: { lte: now } }],
      AND: [{ OR: [{ nextCleanupAt: null }, { nextCleanupAt: { lte: now } }] }],
    },
    data: claimFields(ctx, attemptId, now),
  });
  return lease ? { attemptId, lease } : null;
}

/** What a claim writes on its lease: the attempt, the claimer, and the fence. */
export function claimFields(ctx: ControllerContext, attemptId: string, now: Date) {
  return {
    claimAttemptId: attemptId,
    claimRecord: json({ attemptId, claimer: evidenceIdentity(ctx.identity), claimedAt: now.toISOString() }),
    fencedUntil: new Date(now.getTime() + ctx.config.fenceMs),
  };
}

/**
 * Tears one lease's sandbox down through the provider, after the ownership proof (§2.9,
 * `sandbox_ownership`) on the sandbox found by exact name: a sandbox that is not provably
 * this instance's, named by this lease, is never destroyed. Success marks the lease `expired` with a receipt; failure returns it to
 * `pending_cleanup` with the attempt counted and a back-off.
 */
/** A lease claimed in the transaction that made it due; `lease` as that transaction committed it, when the caller has it. */
export interface ClaimedLease {
  attemptId: string;
  lease?: EnvironmentLease;
  /**
   * The sandbox that transaction found (by the lease's exact name, a moment before) and the
   * ownership proof (§2.9) it stored for this lease with it: the teardown neither asks the
   * provider again nor judges again (one provider call and one write less per reclaim).
   */
  observed?: ObservedSandbox;
}

export interface ObservedSandbox {
  sandbox: SandboxView;
  ownership: SandboxOwnershipResult;
}

/** A lease its reclaim created already claimed, as that transaction committed it. */
export type HandedOverLease = ClaimedLease & { lease: EnvironmentLease };

export async function teardownLease(ctx: ControllerContext, leaseId: string, claimed?: ClaimedLease): Promise<TeardownOutcome> {
  const acted = await actOnLease(ctx, leaseId, claimed);
  if ("done" in acted) return acted.done;
  const [outcome] = await finishTeardowns(ctx, [acted.finishing]);
  if (!outcome) throw new Error(`teardown of lease ${leaseId} recorded no outcome`);
  return outcome;
}

/**
 * The leases a sweep's reclaim batch handed over, torn down at once: each as `teardownLease`
 * does, with the final writes of those the provider destroyed in one statement (one
 * statement per sandbox was most of what a reclaim cost PostgreSQL after the batch's own).
 */
export async function teardownHandedOver(ctx: ControllerContext, handed: readonly HandedOverLease[]): Promise<TeardownOutcome[]> {
  const acted = await Promise.all(handed.map((h) => actOnLease(ctx, h.lease.id, h)));
  const finishing = acted.flatMap((a) => ("finishing" in a ? [a.finishing] : []));
  const finished = finishing.length > 0 ? await finishTeardowns(ctx, finishing) : [];
  return [...acted.flatMap((a) => ("done" in a ? [a.done] : [])), ...finished];
}

/** A teardown whose provider part is done, waiting for its final write (its fence still renewed). */
interface Finishing {
  leaseId: string;
  attemptId: string;
  runId: string | null;
  cleanupAttempts: number;
  outcome: "destroyed" | "already_gone";
  receipt: { outcome: "destroyed" | "already_gone"; sandboxId: string | null; sandboxName: string | null; attemptId: string; by: string; at: string };
  endedAt: Date;
  stopRenewing(): void;
}

/** Claims (unless handed over), proves ownership and destroys; everything but the final write of a success. */
async function actOnLease(ctx: ControllerContext, leaseId: string, claimed?: ClaimedLease): Promise<{ done: TeardownOutcome } | { finishing: Finishing }> {
  // `claimed`: the caller claimed the lease in the transaction that made it due (an operator's
  // reclaim, a sweep's), so no sweep could take it in between. A sweep's reclaim hands over the
  // lease it created: no second read (the provider calls and the final update still check the
  // attempt id, so a lease taken over since is never marked by this attempt).
  const claim = claimed?.lease
    ? { attemptId: claimed.attemptId, lease: claimed.lease }
    : claimed
      ? await ctx.db.environmentLease
          .findFirst({ where: { id: leaseId, status: "pending_cleanup", claimAttemptId: claimed.attemptId } })
          .then((lease) => (lease ? { attemptId: claimed.attemptId, lease } : null))
      : await claimLease(ctx, leaseId);
  if (!claim) return { done: { outcome: "not_claimed", leaseId } };
  const { attemptId, lease } = claim;
  const observed = claimed?.lease ? (claimed.observed ?? null) : null;
  crashPoint(ctx, "during_teardown_claim", { leaseId });

  // Renew the fence while the provider works (and until the final write), so a slow destroy is not taken over.
  const renew = setInterval(() => {
    void ctx.db
      .$executeRaw`UPDATE environment_leases SET fenced_until = now() + ${ctx.config.fenceMs} * interval '1 millisecond' WHERE id = ${leaseId} AND claim_attempt_id = ${attemptId}`
      .catch(() => {});
  }, Math.max(1000, Math.floor(ctx.config.fenceMs / 3)));
  let handedOn = false;
  try {
    // By the id the lease recorded (a name can be reused after a delete, and an old lease may
    // have none); the ownership proof below still requires the name to match.
    const sandbox = observed
      ? observed.sandbox
      : lease.providerLeaseId
        ? await ctx.provider.getById(lease.providerLeaseId)
        : lease.sandboxName
          ? await ctx.provider.getByName(lease.sandboxName)
          : null;
    let outcome: "destroyed" | "already_gone";
    if (!sandbox || sandbox.state === "destroyed" || sandbox.state === "destroying") {
      outcome = "already_gone";
    } else {
      // Destroy only with an ownership proof (§2.9): this lease, a record of this instance,
      // names exactly this sandbox and its labels match. The proof is kept either way.
      let verdict: SandboxOwnershipResult;
      if (observed) verdict = observed.ownership; // its proof was stored with the lease
      else {
        const judged = await judgeOwnership(ctx.db, ctx.config.instanceId, sandbox, { type: "lease", id: leaseId });
        await recordProof(ctx.db, judged.verdict, judged.evidence, ctx.identity.bootId, { leaseId, runId: lease.runId, sandboxId: sandbox.id });
        verdict = judged.verdict;
      }
      if (verdict.verdict !== "owned") {
        const reason = `sandbox ${sandbox.name} (id ${sandbox.id}) is not provably this lease's: ${describeOwnership(verdict)}`;
        await ctx.db.environmentLease.updateMany({
          where: { id: leaseId, claimAttemptId: attemptId },
          data: { status: "failed", cleanupStatus: "ownership_mismatch", lastCleanupError: reason, fencedUntil: null, endedAt: new Date() },
        });
        ctx.log.warn({ leaseId, reason }, "teardown refused: sandbox not provably ours");
        return { done: { outcome: "refused", leaseId, reason } };
      }
      outcome = (await ctx.provider.destroy(sandbox.id)).outcome;
    }
    const endedAt = new Date();
    const receipt = { outcome, sandboxId: sandbox?.id ?? lease.providerLeaseId, sandboxName: lease.sandboxName, attemptId, by: ctx.identity.bootId, at: endedAt.toISOString() };
    handedOn = true;
    return {
      finishing: { leaseId, attemptId, runId: lease.runId, cleanupAttempts: lease.cleanupAttempts, outcome, receipt, endedAt, stopRenewing: () => clearInterval(renew) },
    };
  } catch (err) {
    return { done: await recordFailure(ctx, leaseId, attemptId, lease.cleanupAttempts, err) };
  } finally {
    if (!handedOn) clearInterval(renew);
  }
}

/**
 * Marks the leases `expired` with their receipts in one statement, each only while its attempt
 * still holds it, and appends `sandbox_destroyed` to the runs of those it marked. A failure of
 * the write counts as a failed attempt of each (the teardown is tried again).
 */
async function finishTeardowns(ctx: ControllerContext, items: readonly Finishing[]): Promise<TeardownOutcome[]> {
  try {
    const rows = items.map((f) => ({ id: f.leaseId, attemptId: f.attemptId, outcome: f.outcome, receipt: f.receipt, at: f.endedAt }));
    const marked = await readRows<{ id: string }>(
      ctx.db,
      prepared(Prisma.sql`
        UPDATE environment_leases l SET status = 'expired'::"LeaseStatus", cleanup_status = x.outcome, termination_receipt = x.receipt,
          fenced_until = NULL, ended_at = x.at, updated_at = x.at
        FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) AS x(id uuid, "attemptId" text, outcome text, receipt jsonb, at timestamptz)
        WHERE l.id = x.id AND l.claim_attempt_id = x."attemptId" AND l.id = ANY(${rows.map((r) => r.id)}::uuid[])
        RETURNING l.id::text AS id`),
    );
    const landed = new Set(marked.map((m) => m.id));
    await appendEvents(
      ctx.db,
      items.flatMap((f) => (f.runId && landed.has(f.leaseId) ? [{ runId: f.runId, type: "sandbox_destroyed", bootId: ctx.identity.bootId, data: { leaseId: f.leaseId, ...f.receipt } }] : [])),
    );
    return items.map((f) => ({ outcome: f.outcome, leaseId: f.leaseId }));
  } catch (err) {
    return Promise.all(items.map((f) => recordFailure(ctx, f.leaseId, f.attemptId, f.cleanupAttempts, err)));
  } finally {
    for (const f of items) f.stopRenewing();
  }
}

/** A failed attempt: counted, with a back-off, back to `pending_cleanup` for the next sweep. */
async function recordFailure(ctx: ControllerContext, leaseId: string, attemptId: string, cleanupAttempts: number, err: unknown): Promise<TeardownOutcome> {
  const message = ProviderError.is(err) ? err.message : err instanceof Error ? err.message : String(err);
  const attempts = cleanupAttempts + 1;
  const backoffMs = Math.min(5 * 60_000, 2_000 * 2 ** Math.min(attempts, 8));
  const now = await databaseNow(ctx.db);
  await ctx.db.environmentLease.updateMany({
    where: { id: leaseId, claimAttemptId: attemptId },
    data: { cleanupAttempts: attempts, lastCleanupError: message, nextCleanupAt: new Date(now.getTime() + backoffMs), fencedUntil: null, cleanupStatus: "retrying" },
  });
  ctx.log.warn({ leaseId, err: message, attempts }, "teardown failed; will retry");
  return { outcome: "failed", leaseId, error: message };
}

/**
 * Takes a run's active leases out of service (`pending_cleanup`) inside the transaction that
 * proves the run's epoch (§2.10, `whileCurrent`): once it commits, no executor of the run reads
 * them as its sandbox, so stopping their runners and destroying their sandboxes touches nothing
 * a newer executor uses; a controller that lost the run marks nothing, and so touches nothing.
 */
export async function markRunLeases(tx: Prisma.TransactionClient, runId: string): Promise<EnvironmentLease[]> {
  return tx.environmentLease.updateManyAndReturn({ where: { runId, status: "active" }, data: { status: "pending_cleanup", cleanupStatus: "queued" } });
}

/**
 * After `markRunLeases` committed: stops the runner on each lease it took out of service (a
 * runner already gone is fine), then tears down every lease of the run pending cleanup, one
 * attempt each (a fenced claim each, so a sweep never destroys one twice).
 */
export async function takeDownLeases(ctx: ControllerContext, runId: string, marked: readonly EnvironmentLease[]): Promise<TeardownOutcome[]> {
  for (const lease of marked) {
    if (!lease.providerLeaseId) continue;
    await ctx.runner.stop(lease.providerLeaseId).catch((err: unknown) => {
      ctx.log.debug({ runId, err: String(err) }, "runner stop failed (ignored)");
    });
  }
  // Chaos: the runners are stopped, their leases not yet released (docs/rules.md §2.6).
  if (marked.length > 0) crashPoint(ctx, "after_runner_stop", { runId });
  const leases = await ctx.db.environmentLease.findMany({ where: { runId, status: "pending_cleanup" }, select: { id: true } });
  const results: TeardownOutcome[] = [];
  for (const { id } of leases) results.push(await teardownLease(ctx, id));
  return results;
}
