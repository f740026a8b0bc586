import type { Db, Prisma } from "../db/client";
import { judgeSandboxOwnership, type OwnershipRecord, type SandboxOwnershipEvidence, type SandboxOwnershipResult } from "../engine";
import { ownershipEvidence, ownershipRecordsOf, type SandboxRef } from "../sandboxes/evidence";

type Tx = Db | Prisma.TransactionClient;

/**
 * The records that may name these sandboxes (DOMAIN.md §2.9): creation intents by exact
 * name, leases by provider id or exact name. Records of every instance are read; the
 * engine counts only this instance's.
 */
export async function loadOwnershipRecords(db: Tx, sandboxes: readonly SandboxRef[]): Promise<Map<string, OwnershipRecord[]>> {
  const ids = sandboxes.map((s) => s.id);
  const names = sandboxes.map((s) => s.name);
  const out = new Map<string, OwnershipRecord[]>();
  if (sandboxes.length === 0) return out;
  const [leases, intents] = await Promise.all([
    db.environmentLease.findMany({
      where: { OR: [{ providerLeaseId: { in: ids } }, { sandboxName: { in: names } }] },
      select: { id: true, instanceId: true, companyId: true, providerLeaseId: true, sandboxName: true, intentId: true },
      orderBy: { createdAt: "asc" },
    }),
    db.sandboxCreationIntent.findMany({ where: { creationName: { in: names } }, select: { id: true, instanceId: true, companyId: true, creationName: true } }),
  ]);
  for (const s of sandboxes) {
    const intent = intents.find((i) => i.creationName === s.name) ?? null;
    out.set(s.id, ownershipRecordsOf(intent, leases.filter((l) => l.providerLeaseId === s.id || l.sandboxName === s.name)));
  }
  return out;
}

/** Gathers the records and asks the engine whether this instance owns the sandbox. */
export async function judgeOwnership(
  db: Tx,
  instanceId: string,
  sandbox: SandboxRef,
  actingRecord: SandboxOwnershipEvidence["actingRecord"] = null,
): Promise<{ evidence: SandboxOwnershipEvidence; verdict: SandboxOwnershipResult }> {
  const records = (await loadOwnershipRecords(db, [sandbox])).get(sandbox.id) ?? [];
  const evidence = ownershipEvidence(instanceId, sandbox, records, actingRecord);
  return { evidence, verdict: judgeSandboxOwnership(evidence) };
}
