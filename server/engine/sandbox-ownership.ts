import { check } from "./checks";
import type { OwnershipRecord, SandboxOwnershipEvidence } from "./schemas";
import type { Check, SandboxOwnershipResult } from "./verdicts";

/** Does this record name exactly this sandbox: by provider id, or by exact name when it has no id? */
function names(record: OwnershipRecord, sandbox: SandboxOwnershipEvidence["sandbox"]): boolean {
  switch (record.type) {
    case "intent":
      return record.creationName === sandbox.name;
    case "lease":
      // A lease that learnt an id names that sandbox only: a reused name is another sandbox.
      if (record.providerLeaseId) return record.providerLeaseId === sandbox.id;
      return !!record.sandboxName && record.sandboxName === sandbox.name;
  }
}

/** The operation a record expects in the sandbox's labels; null when it recorded none. */
function expectedOperation(record: OwnershipRecord): string | null {
  return record.type === "intent" ? record.id : (record.operationId ?? null);
}

/**
 * May Runwarden destroy this sandbox? docs/rules.md §2.9. Only when a record of this instance —
 * a creation intent or a lease — names exactly this sandbox and the sandbox's labels
 * (instance, company, operation where recorded) match every such record. Labels alone
 * prove nothing: a sandbox with this instance's labels and no record is `unrecorded`.
 */
export function judgeSandboxOwnership(e: SandboxOwnershipEvidence): SandboxOwnershipResult {
  const { sandbox, instanceId } = e;
  const labels = sandbox.labels;
  const checks: Check[] = [];
  const mine = e.records.filter((r) => r.instanceId === instanceId && names(r, sandbox));
  const namedBy = mine.map((r) => `${r.type}:${r.id}`);
  const done = (verdict: SandboxOwnershipResult["verdict"], reason: SandboxOwnershipResult["reason"]): SandboxOwnershipResult => ({
    kind: "sandbox_ownership",
    verdict,
    code: null,
    reason,
    checks,
    namedBy,
  });

  // 1. Another instance's sandbox is never ours, whatever records say.
  checks.push(check("instance_label_matches", labels.instance === instanceId, instanceId, labels.instance ?? null));
  if (labels.instance !== instanceId) return done("refused", "foreign_instance");

  // 2. A record of this instance names exactly this sandbox.
  checks.push(check("recorded", mine.length > 0, "an intent or lease of this instance naming it", mine.length ? namedBy.join(", ") : "none"));
  if (mine.length === 0) return done("unrecorded", "no_record");

  // 3. Its labels match every record that names it.
  for (const r of mine) {
    const at = `${r.type}:${r.id}`;
    checks.push(check(`company_label_matches ${at}`, labels.company === r.companyId, r.companyId, labels.company ?? null));
    const op = expectedOperation(r);
    if (op !== null) checks.push(check(`operation_label_matches ${at}`, labels.operation === op, op, labels.operation ?? null));
  }
  if (checks.some((c) => !c.ok)) return done("refused", "labels_mismatch");

  // 4. The record a destroy acts through must itself name it.
  const acting = e.actingRecord ?? null;
  if (acting) {
    const at = `${acting.type}:${acting.id}`;
    checks.push(check("acting_record_names_it", namedBy.includes(at), at, namedBy.join(", ")));
    if (!namedBy.includes(at)) return done("refused", "not_named_by_acting_record");
  }
  return done("owned", "record_matches");
}
