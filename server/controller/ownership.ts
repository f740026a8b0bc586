import type { Db, Prisma } from "../db/client";
import { judgeSandboxOwnership, type OwnershipRecord, type SandboxOwnershipEvidence, type SandboxOwnershipResult } from "../engine";
import { ownershipEvidence, ownershipRecordsOf, type SandboxRef } from "../sandboxes/evidence";

type Tx = Db | Prisma.TransactionClient;

/**
 * The records that may name these sandboxes (docs/rules.md §2.9): creation intents by exact
 * name, leases by provider id or exact name. Records of every instance are read; the
 * engine counts only this instance's.
 */
export async function loadOwnershipRecords(db: Tx, sandboxes: readonly SandboxRef[]): Promise<Map<string, OwnershipRecord[]>> {
  const ids = sandboxes.map((s) => s.id);
  const names = sandboxes.map((s) => s.name);
  const out = new Map<string, OwnershipRecord[]>();
  if (sandboxes.length === 0) return out;
  // One round trip for both kinds (a teardown used to read them in two; docs/decisions/0003-cost-at-scale.md); leases oldest first.
  const rows = await db.$queryRaw<RecordRow[]>`
    SELECT * FROM (
      SELECT 'intent' AS type, operation_id AS id, instance_id AS "instanceId", company_id AS "companyId", creation_name AS "creationName",
        NULL::text AS "providerLeaseId", NULL::text AS "sandboxName", NULL::text AS "intentId", NULL::timestamptz AS "createdAt"
      FROM sandbox_creation_intents WHERE creation_name = ANY(${names}::text[])
      UNION ALL
      SELECT 'lease', id::text, instance_id, company_id, NULL, provider_lease_id, sandbox_name, intent_id, created_at
      FROM environment_leases WHERE provider_lease_id = ANY(${ids}::text[]) OR sandbox_name = ANY(${names}::text[])
    ) r ORDER BY r.type, r."createdAt", r.id`;
  const intents = rows.filter((r) => r.type === "intent").map((r) => ({ id: r.id, instanceId: r.instanceId, companyId: r.companyId, creationName: r.creationName ?? "" }));
  const leases = rows.filter((r) => r.type === "lease");
  for (const s of sandboxes) {
    const intent = intents.find((i) => i.creationName === s.name) ?? null;
    out.set(s.id, ownershipRecordsOf(intent, leases.filter((l) => l.providerLeaseId === s.id || l.sandboxName === s.name)));
  }
  return out;
}

type RecordRow = {
  type: "intent" | "lease";
  id: string;
  instanceId: string;
  companyId: string;
  creationName: string | null;
  providerLeaseId: string | null;
  sandboxName: string | null;
  intentId: string | null;
  createdAt: Date | null;
};

/** One sandbox to judge: the record acting on it, and records the caller's transaction writes with the proof. */
export interface OwnershipQuestion {
  sandbox: SandboxRef;
  actingRecord?: SandboxOwnershipEvidence["actingRecord"];
  writing?: readonly OwnershipRecord[];
}

/**
 * Gathers the records of several sandboxes in one round trip and asks the engine, for each,
 * whether this instance owns it; answers in the questions' order.
 */
export async function judgeOwnerships(
  db: Tx,
  instanceId: string,
  questions: readonly OwnershipQuestion[],
): Promise<Array<{ evidence: SandboxOwnershipEvidence; verdict: SandboxOwnershipResult }>> {
  const stored = await loadOwnershipRecords(db, questions.map((q) => q.sandbox));
  return questions.map((q) => {
    const records = [...(stored.get(q.sandbox.id) ?? []), ...(q.writing ?? [])];
    const evidence = ownershipEvidence(instanceId, q.sandbox, records, q.actingRecord ?? null);
    return { evidence, verdict: judgeSandboxOwnership(evidence) };
  });
}

/**
 * Gathers the records and asks the engine whether this instance owns the sandbox.
 * `writing`: records the caller's transaction writes with this proof (they commit together).
 */
export async function judgeOwnership(
  db: Tx,
  instanceId: string,
  sandbox: SandboxRef,
  actingRecord: SandboxOwnershipEvidence["actingRecord"] = null,
  writing: readonly OwnershipRecord[] = [],
): Promise<{ evidence: SandboxOwnershipEvidence; verdict: SandboxOwnershipResult }> {
  const [judged] = await judgeOwnerships(db, instanceId, [{ sandbox, actingRecord, writing }]);
  if (!judged) throw new Error(`no ownership judgement for sandbox ${sandbox.id}`);
  return judged;
}
