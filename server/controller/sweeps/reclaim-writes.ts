import crypto from "node:crypto";
import { Prisma, prepared, type EnvironmentLease, type SandboxCreationIntent } from "../../db/client";
import type { SandboxView } from "../../providers/types";
import { ownershipRecordsOf } from "../../sandboxes/evidence";
import type { ControllerContext } from "../context";
import { judgeOwnerships } from "../ownership";
import { proofData } from "../records";
import { claimFields, type HandedOverLease } from "../teardown";

/**
 * The reclaim both creation-intent paths share (docs/rules.md §2.5: a pending intent's,
 * sweeps/creation-intents.ts; a late materialisation's, sweeps/late.ts): a batch of reclaims
 * written in one statement, with the leases claimed for this controller's teardown (§2.6).
 */

/** One intent's reclaim, as `reclaimWrites` takes it. */
export interface Reclaim {
  intent: Pick<SandboxCreationIntent, "id" | "instanceId" | "companyId" | "creationName">;
  proofs: Prisma.ProofCreateManyInput[];
  runId: string | null;
  /** The intent the lease names (null: a committed lease already names it). */
  leaseIntentId: string | null;
  sandboxId: string | null;
  cleanupStatus: "reclaimed_from_intent" | "reclaimed_late_materialisation";
  lastInspection: object;
  nextAttemptAt: Date | null;
  now: Date;
  /** The sandbox just found by the intent's exact name: its teardown's ownership proof is judged and stored here. */
  observed?: SandboxView | null;
}

/**
 * The writes of a batch of reclaims in one statement (three round trips per reclaim were
 * most of a reclaim's cost): the proofs; for each intent a pending_cleanup
 * lease, claimed for this controller's teardown in the same transaction (§2.6: an attempt id,
 * the claimer, a fence; a crash before the teardown leaves a fence whose claimer exited, which
 * the teardown sweep releases), so the teardown needs no claim of its own; and the intent
 * marked reclaimed.
 */
export async function reclaimWrites(tx: Prisma.TransactionClient, ctx: ControllerContext, reclaims: readonly Reclaim[]): Promise<HandedOverLease[]> {
  // When the rows are written (what Prisma's now() defaults and @updatedAt gave): after the provider answered.
  const at = new Date();
  const made = reclaims.map((r) => {
    const attemptId = crypto.randomUUID();
    const claim = claimFields(ctx, attemptId, r.now);
    const lease: EnvironmentLease = {
      id: crypto.randomUUID(),
      runId: r.runId,
      instanceId: r.intent.instanceId,
      companyId: r.intent.companyId,
      intentId: r.leaseIntentId,
      provider: ctx.providerTarget,
      providerLeaseId: r.sandboxId,
      sandboxName: r.intent.creationName,
      remoteCwd: null,
      turn: null,
      acquisitionOutcome: "created",
      status: "pending_cleanup",
      cleanupStatus: r.cleanupStatus,
      cleanupAttempts: 0,
      nextCleanupAt: null,
      lastCleanupError: null,
      claimAttemptId: claim.claimAttemptId,
      claimRecord: claim.claimRecord as Prisma.JsonValue,
      fencedUntil: claim.fencedUntil,
      terminationReceipt: null,
      // A reclaimed sandbox's creation settings are unknown here.
      autoStopMinutes: null,
      autoDeleteMinutes: null,
      createdAt: at,
      updatedAt: at,
      endedAt: null,
    };
    return { r, lease, handed: { attemptId, lease } as HandedOverLease };
  });
  // The ownership proofs (§2.9) the teardowns act through, on the sandboxes just found: the
  // stored records that name each and the lease written with its proof (one commit, or neither).
  const written = reclaims.flatMap((r) => r.proofs);
  const observing = made.flatMap((m) => (m.r.observed ? [{ m, sandbox: m.r.observed }] : []));
  const judged = await judgeOwnerships(
    tx,
    ctx.config.instanceId,
    observing.map(({ m, sandbox }) => ({ sandbox, actingRecord: { type: "lease" as const, id: m.lease.id }, writing: ownershipRecordsOf(null, [m.lease]) })),
  );
  for (const [i, { m, sandbox }] of observing.entries()) {
    const j = judged[i];
    if (!j) throw new Error(`no ownership judgement for sandbox ${sandbox.id}`);
    written.push(proofData(j.verdict, j.evidence, ctx.identity.bootId, { leaseId: m.lease.id, runId: m.r.runId, sandboxId: sandbox.id }));
    m.handed.observed = { sandbox, ownership: j.verdict };
  }
  const proofs = written.map((p) => ({ ...p, id: crypto.randomUUID() }));
  const leases = made.map(({ lease }) => ({
    id: lease.id,
    runId: lease.runId,
    instanceId: lease.instanceId,
    companyId: lease.companyId,
    intentId: lease.intentId,
    provider: lease.provider,
    providerLeaseId: lease.providerLeaseId,
    sandboxName: lease.sandboxName,
    cleanupStatus: lease.cleanupStatus,
    claimAttemptId: lease.claimAttemptId,
    claimRecord: lease.claimRecord,
    fencedUntil: lease.fencedUntil,
  }));
  const intents = reclaims.map((r) => ({ id: r.intent.id, now: r.now, lastInspection: r.lastInspection, nextAttemptAt: r.nextAttemptAt }));
  const updated = await tx.$executeRaw(reclaimWriteSql({ at, proofs, leases, intents }));
  if (updated !== reclaims.length) throw new Error(`reclaim of intents ${reclaims.map((r) => r.intent.id).join(", ")}: ${updated} of ${reclaims.length} intent rows updated`);
  return made.map((m) => m.handed);
}

/** What one reclaim batch writes: proofs, claimed leases, and the intents marked reclaimed. */
export interface ReclaimRows {
  at: Date;
  proofs: Array<Prisma.ProofCreateManyInput & { id: string }>;
  leases: Array<
    Pick<
      EnvironmentLease,
      "id" | "runId" | "instanceId" | "companyId" | "intentId" | "provider" | "providerLeaseId" | "sandboxName" | "cleanupStatus" | "claimAttemptId" | "claimRecord" | "fencedUntil"
    >
  >;
  intents: Array<{ id: string; now: Date; lastInspection: unknown; nextAttemptAt: Date | null }>;
}

/**
 * One statement for a reclaim batch's writes. The intents' ids go in again as an array: the
 * planner takes jsonb_to_recordset for 100 rows and joined the intents by a sequential scan
 * (291 pages a batch at 5 k intents); with `= ANY` each is read by its primary key.
 */
export function reclaimWriteSql({ at, proofs, leases, intents }: ReclaimRows): Prisma.Sql {
  return prepared(Prisma.sql`
    WITH p AS (
      INSERT INTO proofs (id, kind, verdict, code, reason, checks, evidence, output, run_id, claim_id, intent_id, lease_id, sandbox_id, evaluated_by, evaluated_at)
      SELECT x.id, x.kind, x.verdict, x.code, x.reason, x.checks, x.evidence, x.output, x."runId", x."claimId", x."intentId", x."leaseId", x."sandboxId", x."evaluatedBy", ${at}::timestamptz
      FROM jsonb_to_recordset(${JSON.stringify(proofs)}::jsonb) AS x(id uuid, kind text, verdict text, code text, reason text, checks jsonb, evidence jsonb, output jsonb,
        "runId" uuid, "claimId" uuid, "intentId" text, "leaseId" uuid, "sandboxId" text, "evaluatedBy" text)),
    l AS (
      INSERT INTO environment_leases (id, run_id, instance_id, company_id, intent_id, provider, provider_lease_id, sandbox_name, acquisition_outcome, status, cleanup_status,
        claim_attempt_id, claim_record, fenced_until, created_at, updated_at)
      SELECT x.id, x."runId", x."instanceId", x."companyId", x."intentId", x.provider, x."providerLeaseId", x."sandboxName",
        'created'::"AcquisitionOutcome", 'pending_cleanup'::"LeaseStatus", x."cleanupStatus", x."claimAttemptId", x."claimRecord", x."fencedUntil", ${at}::timestamptz, ${at}::timestamptz
      FROM jsonb_to_recordset(${JSON.stringify(leases)}::jsonb) AS x(id uuid, "runId" uuid, "instanceId" text, "companyId" text, "intentId" text, provider text,
        "providerLeaseId" text, "sandboxName" text, "cleanupStatus" text, "claimAttemptId" text, "claimRecord" jsonb, "fencedUntil" timestamptz))
    UPDATE sandbox_creation_intents i SET status = 'reclaimed'::"IntentStatus", resolved_at = x.now, last_inspection = x."lastInspection",
      last_inspected_at = x.now, attempts = i.attempts + 1, next_attempt_at = COALESCE(x."nextAttemptAt", i.next_attempt_at), updated_at = ${at}::timestamptz
    FROM jsonb_to_recordset(${JSON.stringify(intents)}::jsonb) AS x(id text, now timestamptz, "lastInspection" jsonb, "nextAttemptAt" timestamptz)
    WHERE i.operation_id = x.id AND i.operation_id = ANY(${intents.map((x) => x.id)}::text[])`);
}
