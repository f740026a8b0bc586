import type { Db, Prisma } from "../db/client";
import { judgeSandboxOwnership, type OwnershipRecord, type SandboxOwnershipEvidence, type SandboxOwnershipResult } from "../engine";
import { normaliseLabels } from "../providers/labels";

type Tx = Db | Prisma.TransactionClient;

/** What the ownership proof needs of a sandbox (a provider view has more). */
export interface SandboxRef {
  id: string;
  name: string;
  labels: Record<string, string>;
}

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

type IntentRow = { id: string; instanceId: string; companyId: string; creationName: string };
type LeaseRow = { id: string; instanceId: string; companyId: string; providerLeaseId: string | null; sandboxName: string | null; intentId: string | null };

/** Stored intents and leases as the ownership proof's records. */
export function ownershipRecordsOf(intent: IntentRow | null, leases: readonly LeaseRow[]): OwnershipRecord[] {
  const out: OwnershipRecord[] = [];
  if (intent) out.push({ type: "intent", id: intent.id, instanceId: intent.instanceId, companyId: intent.companyId, creationName: intent.creationName });
  for (const l of leases) {
    out.push({ type: "lease", id: l.id, instanceId: l.instanceId, companyId: l.companyId, providerLeaseId: l.providerLeaseId, sandboxName: l.sandboxName, operationId: l.intentId });
  }
  return out;
}

export function ownershipEvidence(
  instanceId: string,
  sandbox: SandboxRef,
  records: OwnershipRecord[],
  actingRecord: SandboxOwnershipEvidence["actingRecord"] = null,
): SandboxOwnershipEvidence {
  return { kind: "sandbox_ownership", instanceId, sandbox: { id: sandbox.id, name: sandbox.name, labels: normaliseLabels(sandbox.labels) }, records, actingRecord };
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

/** The failed checks of a refusal, in words an operator reads. */
export function describeOwnership(v: SandboxOwnershipResult): string {
  const failed = v.checks.filter((c) => !c.ok).map((c) => `${c.name}: expected ${String(c.expected)}, found ${String(c.actual)}`);
  return `${v.verdict} (${v.reason})${failed.length ? `: ${failed.join("; ")}` : ""}`;
}
