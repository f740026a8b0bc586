import { databaseNow } from "../db/clock";
import crypto from "node:crypto";
import { z } from "zod";
import { text } from "../text";
import { writeAudit, type Actor } from "../audit/write";
import type { ControllerContext } from "../controller/context";
import { recordProof } from "../controller/records";
import { claimFields, teardownLease } from "../controller/teardown";
import type { Db } from "../db/client";
import { judgeSandboxOwnership } from "../engine";
import { AppError } from "../errors";
import { ProviderError } from "../providers/errors";
import { normaliseLabels } from "../providers/labels";
import type { SandboxView } from "../providers/types";
import { inScope, type CompanyScope } from "../shared/roles";
import { observerOf } from "../services/observer";
import { NOT_LISTED } from "./dry-run";
import { ownershipEvidence, ownershipRecordsOf } from "./evidence";
import { forgetSandboxes } from "./inventory";
import { judgeSandbox } from "./ownership";
import { loadRecords } from "./records";

const UNRECORDED_ACTION = "orphans.destroy_unrecorded";

export const destroyUnrecordedInput = z.object({
  sandboxId: text(200),
  /** The operator types the sandbox's exact name: one sandbox, deliberately. */
  confirmName: text(200),
});
export type DestroyUnrecordedInput = z.input<typeof destroyUnrecordedInput>;

export const destroyUnrecordedOutput = z.object({
  sandboxId: z.string(),
  name: z.string(),
  outcome: z.enum(["destroyed", "already_gone", "failed"]),
  reason: z.string(),
  leaseId: z.string(),
  proofId: z.string(),
});
export type DestroyUnrecordedOutput = z.infer<typeof destroyUnrecordedOutput>;

/**
 * Destroys one `unrecorded` sandbox (§2.9): this instance's labels, no record of this
 * instance naming it. Never part of a batch: the operator names it by typing its exact
 * name; it is looked up again by that name, judged again (still unrecorded, not held, in
 * the operator's companies), the ownership proof is stored, and the destroy goes through
 * a pending-cleanup lease and `teardownLease`. Audited as `unrecorded`, refusals too.
 */
export async function destroyUnrecorded(
  db: Db,
  service: ControllerContext,
  scope: CompanyScope,
  instanceId: string,
  actor: Actor,
  input: z.infer<typeof destroyUnrecordedInput>,
): Promise<DestroyUnrecordedOutput> {
  const audit = (outcome: "ok" | "refused" | "error", detail: Record<string, unknown>, companyId: string | null = null) =>
    writeAudit(db, actor, { action: UNRECORDED_ACTION, targetType: "sandbox", targetId: input.sandboxId, companyId, input, outcome, detail: { ownership: "unrecorded", ...detail } });
  const refuse = async (code: "PRECONDITION_FAILED" | "NOT_FOUND", reason: string, companyId: string | null = null): Promise<never> => {
    await audit("refused", { reason }, companyId);
    throw new AppError(code, reason);
  };
  const now = new Date();
  let sandbox: SandboxView | null;
  try {
    sandbox = await service.provider.getByName(input.confirmName, { now });
  } catch (err) {
    if (ProviderError.is(err)) throw new AppError("PROVIDER_ERROR", `the provider could not be asked for ${input.confirmName}: ${err.message}`);
    throw err;
  }
  if (!sandbox || sandbox.state === "destroyed" || sandbox.state === "destroying") return refuse("NOT_FOUND", `no sandbox named ${input.confirmName} exists: type the sandbox's exact name`);
  if (sandbox.id !== input.sandboxId) return refuse("PRECONDITION_FAILED", `the name ${input.confirmName} belongs to sandbox ${sandbox.id}, not ${input.sandboxId}: type the exact name of the sandbox you chose`);
  const labels = normaliseLabels(sandbox.labels);
  if (labels.instance !== instanceId) return refuse("NOT_FOUND", NOT_LISTED);
  if (!labels.company || !inScope(scope, labels.company)) return refuse("NOT_FOUND", NOT_LISTED);
  const records = (await loadRecords(db, instanceId, [sandbox])).get(sandbox.id)!;
  const j = judgeSandbox(observerOf(service), instanceId, sandbox, records, now);
  if (j.held) return refuse("PRECONDITION_FAILED", `not an orphan: ${j.reason}`, labels.company);
  if (j.verdict !== "unrecorded") {
    return refuse("PRECONDITION_FAILED", `it is ${j.verdict.replace("_", " ")}, not unrecorded: ${j.reason}${j.verdict === "reclaimable" ? " (reclaim it with a dry run instead)" : ""}`, labels.company);
  }

  const evidence = ownershipEvidence(instanceId, sandbox, ownershipRecordsOf(records.intent, records.leases));
  const verdict = judgeSandboxOwnership(evidence);
  // Claimed for this teardown as it is made (see reclaim.ts): a sweep never takes it in between.
  const attemptId = crypto.randomUUID();
  const { proofId, leaseId } = await db.$transaction(async (tx) => {
    const lease = await tx.environmentLease.create({
      data: {
        runId: null,
        instanceId,
        companyId: labels.company!,
        provider: service.providerTarget,
        providerLeaseId: sandbox.id,
        sandboxName: sandbox.name,
        acquisitionOutcome: "created",
        status: "pending_cleanup",
        cleanupStatus: "unrecorded_destroyed_by_operator",
        ...claimFields(service, attemptId, await databaseNow(tx)),
      },
    });
    const proof = await recordProof(tx, verdict, evidence, `operator:${actor.id}`, { leaseId: lease.id, sandboxId: sandbox.id });
    return { proofId: proof.id, leaseId: lease.id };
  });
  const result = await teardownLease(service, leaseId, { attemptId });
  const out = (outcome: DestroyUnrecordedOutput["outcome"], reason: string): DestroyUnrecordedOutput => ({ sandboxId: sandbox.id, name: sandbox.name, outcome, reason, leaseId, proofId });
  let done: DestroyUnrecordedOutput;
  switch (result.outcome) {
    case "destroyed":
      done = out("destroyed", `destroyed through lease ${leaseId}; ownership: unrecorded (${j.reason})`);
      break;
    case "already_gone":
      done = out("already_gone", "the provider no longer had it when the teardown ran");
      break;
    case "failed":
      done = out("failed", `the destroy failed: ${result.error}; the sweep retries it`);
      break;
    case "refused":
      done = out("failed", result.reason);
      break;
    case "not_claimed":
      done = out("failed", "another teardown claimed it first; that one destroys it");
      break;
  }
  if (done.outcome !== "failed") await forgetSandboxes(db, instanceId, [sandbox.id]);
  await audit(done.outcome === "failed" ? "error" : "ok", { outcome: done.outcome, reason: done.reason, leaseId, proofId, name: sandbox.name }, labels.company);
  return done;
}
