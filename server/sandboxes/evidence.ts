import type { OwnershipRecord, SandboxOwnershipEvidence, SandboxOwnershipResult } from "../engine";
import { normaliseLabels } from "../providers/labels";

/**
 * The sandbox_ownership proof's evidence from stored rows (docs/rules.md §2.9), pure: the
 * controller's teardown and the orphans page build it the same way.
 */

/** What the ownership proof needs of a sandbox (a provider view has more). */
export interface SandboxRef {
  id: string;
  name: string;
  labels: Record<string, string>;
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

/** The failed checks of a refusal, in words an operator reads. */
export function describeOwnership(v: SandboxOwnershipResult): string {
  const failed = v.checks.filter((c) => !c.ok).map((c) => `${c.name}: expected ${String(c.expected)}, found ${String(c.actual)}`);
  return `${v.verdict} (${v.reason})${failed.length ? `: ${failed.join("; ")}` : ""}`;
}
