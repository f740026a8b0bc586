import { databaseNow } from "../db/clock";
import crypto from "node:crypto";
import type { z } from "zod";
import { writeAudit, type Actor } from "../audit/write";
import type { ControllerContext } from "../controller/context";
import { claimFields, teardownLease } from "../controller/teardown";
import type { Db } from "../db/client";
import { AppError } from "../errors";
import { normaliseLabels } from "../providers/labels";
import type { SandboxView } from "../providers/types";
import { inLanes } from "../lib/lanes";
import { inScope, type CompanyScope } from "../shared/roles";
import { observerOf } from "../services/observer";
import { counts, PLAN_ACTION, PLAN_TTL_MS, planSchema, RECLAIM_ACTION, type reclaimInput, type ReclaimOutput, type ReclaimResult } from "./dry-run";
import { forgetSandboxes } from "./inventory";
import { fmt, judgeSandbox } from "./ownership";
import { LIVE, loadRecords, type SandboxRecords } from "./records";

/** orphans.reclaim for real: carries out a dry run through the controller's teardown (an action, not a read model). */

/**
 * Reclaim, for real: carries out a dry run. Each sandbox is looked up again by its exact
 * name, its id and labels checked, and its ownership judged again at that moment; only a
 * sandbox still `reclaimable` is destroyed, through a pending-cleanup lease and
 * `teardownLease` (claimed with a fence, labels checked once more, receipt recorded).
 */
export async function executeReclaim(db: Db, service: ControllerContext, scope: CompanyScope, instanceId: string, actor: Actor, input: z.infer<typeof reclaimInput>): Promise<ReclaimOutput> {
  const planId = input.planId!;
  const entry = await db.auditEntry.findFirst({ where: { action: PLAN_ACTION, targetType: "reclaim_plan", targetId: planId }, orderBy: { id: "desc" } });
  const parsed = planSchema.safeParse((entry?.detail as { plan?: unknown } | null)?.plan);
  const refusal =
    !entry || !parsed.success || parsed.data.instanceId !== instanceId
      ? `no dry run ${planId} for instance ${instanceId}: run the dry run first`
      : Date.now() - Date.parse(parsed.data.at) > PLAN_TTL_MS
        ? `the dry run ${planId} is older than ${PLAN_TTL_MS / 60_000} minutes: run it again`
        : null;
  if (refusal || !parsed.success) {
    const reason = refusal ?? "the dry run could not be read";
    await writeAudit(db, actor, { action: RECLAIM_ACTION, targetType: "reclaim_plan", targetId: planId, input, outcome: "refused", detail: { reason } });
    throw new AppError("PRECONDITION_FAILED", reason);
  }
  const plan = parsed.data;
  const planned = new Map(plan.destroy.map((d) => [d.sandboxId, d]));

  // As many sandboxes at once as a sweep has lanes (each is its own lookup, proof and
  // teardown); one at a time, 100 kept an operator waiting seconds. An unexpected error
  // fails its own sandbox, so every result, that one too, reaches the audit entry below.
  const results: ReclaimResult[] = new Array<ReclaimResult>(input.sandboxIds.length);
  await inLanes(input.sandboxIds, service.config.sweepLanes, async (id, i) => {
    // A plan made by someone who sees more companies is carried out only within this scope.
    const p = planned.get(id);
    if (!p || !inScope(scope, p.companyId)) {
      results[i] = { sandboxId: id, name: null, companyId: null, verdict: null, outcome: "refused", reason: "the dry run did not list it for destruction", hourlyCost: null, accruedCost: null, leaseId: null };
      return;
    }
    results[i] = await reclaimOne(db, service, instanceId, p).catch(
      (err: unknown): ReclaimResult => ({
        sandboxId: id,
        name: p.name,
        companyId: p.companyId,
        verdict: null,
        outcome: "failed",
        reason: `unexpected error: ${err instanceof Error ? err.message : String(err)}`,
        hourlyCost: null,
        accruedCost: null,
        leaseId: null,
      }),
    );
  });
  const c = counts(results);
  await forgetSandboxes(db, instanceId, results.filter((r) => r.outcome === "destroyed" || r.outcome === "already_gone").map((r) => r.sandboxId));
  await writeAudit(db, actor, {
    action: RECLAIM_ACTION,
    targetType: "reclaim_plan",
    targetId: planId,
    input,
    outcome: c.failed ? "error" : c.refused === results.length ? "refused" : "ok",
    detail: { results: results.map((r) => ({ sandboxId: r.sandboxId, name: r.name, outcome: r.outcome, reason: r.reason, leaseId: r.leaseId })) },
  });
  return { dryRun: false, planId, instanceId, at: new Date(), results, confirmWord: null, counts: c };
}

async function reclaimOne(db: Db, service: ControllerContext, instanceId: string, p: { sandboxId: string; name: string; companyId: string }): Promise<ReclaimResult> {
  const base = { sandboxId: p.sandboxId, name: p.name, companyId: p.companyId, hourlyCost: null, accruedCost: null, leaseId: null };
  const now = new Date();
  let sandbox: SandboxView | null;
  try {
    sandbox = await service.provider.getByName(p.name, { now });
  } catch (err) {
    return { ...base, verdict: null, outcome: "failed", reason: `the provider could not be asked: ${err instanceof Error ? err.message : String(err)}` };
  }
  if (!sandbox || sandbox.state === "destroyed" || sandbox.state === "destroying") {
    // Record the absence on a lease still waiting to tear it down (receipt: already_gone).
    const waiting = await db.environmentLease.findFirst({ where: { status: "pending_cleanup", providerLeaseId: p.sandboxId, sandboxName: p.name } });
    if (waiting) await teardownLease(service, waiting.id);
    return { ...base, verdict: null, outcome: "already_gone", reason: `no sandbox named ${p.name} exists any more`, leaseId: waiting?.id ?? null };
  }
  const cost = { hourlyCost: sandbox.hourlyCost, accruedCost: null };
  if (sandbox.id !== p.sandboxId) {
    return { ...base, ...cost, verdict: null, outcome: "refused", reason: `the name ${p.name} now belongs to another sandbox (${sandbox.id}); nothing was done` };
  }
  const labels = normaliseLabels(sandbox.labels);
  if (labels.instance !== instanceId || labels.company !== p.companyId) {
    return { ...base, ...cost, verdict: "foreign", outcome: "refused", reason: `its labels changed since the dry run: instance ${labels.instance ?? "none"}, company ${labels.company ?? "none"}` };
  }
  const records = (await loadRecords(db, instanceId, [sandbox])).get(sandbox.id)!;
  const j = judgeSandbox(observerOf(service), instanceId, sandbox, records, now);
  if (j.held) return { ...base, ...cost, verdict: null, outcome: "refused", reason: `no longer an orphan: ${j.reason}` };
  if (j.verdict !== "reclaimable") return { ...base, ...cost, verdict: j.verdict, outcome: "refused", reason: `${j.verdict.replace("_", " ")} now: ${j.reason}` };

  const prepared = await leaseForReclaim(db, service, instanceId, sandbox, p.companyId, records, now);
  if ("refused" in prepared) return { ...base, ...cost, verdict: j.verdict, outcome: "refused", reason: prepared.refused };
  const result = await teardownLease(service, prepared.leaseId, { attemptId: prepared.attemptId });
  const at = { ...base, ...cost, verdict: j.verdict, leaseId: prepared.leaseId };
  switch (result.outcome) {
    case "destroyed":
      return { ...at, outcome: "destroyed", reason: `destroyed through lease ${prepared.leaseId}: ${j.reason}` };
    case "already_gone":
      return { ...at, outcome: "already_gone", reason: "the provider no longer had it when the teardown ran" };
    case "refused":
      return { ...at, outcome: "refused", reason: result.reason };
    case "not_claimed":
      return { ...at, outcome: "refused", reason: "another teardown claimed it first (its fence holds); that one destroys it" };
    case "failed":
      return { ...at, outcome: "failed", reason: `the destroy failed: ${result.error}; the sweep retries it` };
  }
}

/**
 * The pending-cleanup lease the destruction goes through: one already waiting (taken over
 * unless another teardown's fence holds it), the sandbox's active leases of finished runs,
 * its pending creation intent (reclaimed under a row lock, as the sweep does), or a new one.
 */
async function leaseForReclaim(
  db: Db,
  service: ControllerContext,
  instanceId: string,
  sandbox: SandboxView,
  companyId: string,
  records: SandboxRecords,
  now: Date,
): Promise<{ leaseId: string; attemptId: string } | { refused: string }> {
  const onThis = { OR: [{ providerLeaseId: sandbox.id }, { providerLeaseId: null, sandboxName: sandbox.name }] };
  // The lease is claimed for this teardown in the transaction that makes it due: a sweep's
  // teardown never sees it unclaimed, so the operator's action is the one that destroys it.
  const attemptId = crypto.randomUUID();
  // Fences on the database's clock: a sweep on another host judges them.
  const fenceNow = await databaseNow(db);
  const claim = claimFields(service, attemptId, fenceNow);
  return db.$transaction(async (tx) => {
    const waiting = await tx.environmentLease.findFirst({ where: { AND: [onThis, { status: "pending_cleanup" }] }, orderBy: { createdAt: "desc" } });
    if (waiting) {
      if (waiting.fencedUntil && waiting.fencedUntil > fenceNow) {
        return { refused: `a teardown of it is already in flight (lease ${waiting.id}, fenced until ${fmt(waiting.fencedUntil)}); it finishes on its own` };
      }
      // The operator asked now: skip a failed teardown's back-off.
      const { count } = await tx.environmentLease.updateMany({
        where: { id: waiting.id, status: "pending_cleanup", OR: [{ fencedUntil: null }, { fencedUntil: { lte: fenceNow } }] },
        data: { nextCleanupAt: null, ...claim },
      });
      if (count === 0) return { refused: `a teardown of it started a moment ago (lease ${waiting.id}); it finishes on its own` };
      return { leaseId: waiting.id, attemptId };
    }
    const active = await tx.environmentLease.findMany({ where: { AND: [onThis, { status: "active" }] }, include: { run: { select: { status: true } } } });
    if (active.some((l) => l.run && LIVE.has(l.run.status))) return { refused: "a live run took a lease on it since the dry run" };
    const first = active[0];
    if (first) {
      await tx.environmentLease.updateMany({ where: { id: { in: active.map((l) => l.id) }, status: "active" }, data: { status: "pending_cleanup", cleanupStatus: "reclaimed_by_operator", nextCleanupAt: null } });
      await tx.environmentLease.update({ where: { id: first.id }, data: claim });
      return { leaseId: first.id, attemptId };
    }
    let intentId: string | null = null;
    const intent = records.intent;
    if (intent?.status === "pending") {
      const locked = await tx.$queryRaw<Array<{ operation_id: string }>>`
        SELECT operation_id FROM sandbox_creation_intents
        WHERE operation_id = ${intent.id} AND status = 'pending'::"IntentStatus"
        FOR UPDATE SKIP LOCKED`;
      if (locked.length === 0) return { refused: `a sweep is deciding creation intent ${intent.id} right now; look again in a moment` };
      const committed = await tx.environmentLease.count({ where: { intentId: intent.id } });
      if (committed === 0) intentId = intent.id;
      await tx.sandboxCreationIntent.update({
        where: { id: intent.id },
        data: {
          status: "reclaimed",
          resolvedAt: now,
          attempts: { increment: 1 },
          lastInspection: { found: true, sandboxId: sandbox.id, name: sandbox.name, labels: sandbox.labels, at: now.toISOString(), by: "operator_reclaim" },
          lastInspectedAt: now,
        },
      });
    }
    const lease = await tx.environmentLease.create({
      data: {
        runId: records.run?.id ?? null,
        instanceId,
        companyId,
        intentId,
        provider: service.providerTarget,
        providerLeaseId: sandbox.id,
        sandboxName: sandbox.name,
        acquisitionOutcome: "created",
        status: "pending_cleanup",
        cleanupStatus: "reclaimed_by_operator",
        ...claim,
      },
    });
    return { leaseId: lease.id, attemptId };
  });
}
