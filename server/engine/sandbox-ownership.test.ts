import { describe, expect, test } from "vitest";
import { judgeSandboxOwnership } from "./sandbox-ownership";
import type { OwnershipRecord, SandboxOwnershipEvidence } from "./schemas";
import { sandboxOwnership } from "../test/evidence";
import { sandboxOwnershipResultSchema } from "./verdicts";

const base = sandboxOwnership();
const sandbox = base.sandbox;
const intent = base.records[0] as Extract<OwnershipRecord, { type: "intent" }>;
const lease = base.records[1] as Extract<OwnershipRecord, { type: "lease" }>;
const labels = (over: Partial<typeof sandbox.labels>) => ({ ...sandbox, labels: { ...sandbox.labels, ...over } });

const cases: { name: string; e: SandboxOwnershipEvidence; verdict: "owned" | "unrecorded" | "refused"; reason: string }[] = [
  { name: "intent and lease of this instance name it, labels match", e: base, verdict: "owned", reason: "record_matches" },
  { name: "only the intent names it", e: sandboxOwnership({ records: [intent] }), verdict: "owned", reason: "record_matches" },
  { name: "only the lease names it, by provider id", e: sandboxOwnership({ records: [lease] }), verdict: "owned", reason: "record_matches" },
  {
    name: "a lease that never learnt the id names it by exact name",
    e: sandboxOwnership({ records: [{ type: "lease", id: "l-2", instanceId: "inst-a", companyId: "co-1", providerLeaseId: null, sandboxName: "rw-create-op-1", operationId: null }] }),
    verdict: "owned",
    reason: "record_matches",
  },
  // Labels alone are not ownership: two installations on one organization share label shapes.
  { name: "our labels, no record", e: sandboxOwnership({ records: [] }), verdict: "unrecorded", reason: "no_record" },
  {
    name: "only another instance's records name it",
    e: sandboxOwnership({ records: [{ ...intent, instanceId: "inst-b" }, { ...lease, instanceId: "inst-b" }] }),
    verdict: "unrecorded",
    reason: "no_record",
  },
  {
    name: "a lease with another provider id and the same name (a reused name) does not name it",
    e: sandboxOwnership({ records: [{ ...lease, providerLeaseId: "sbx-other" }] }),
    verdict: "unrecorded",
    reason: "no_record",
  },
  { name: "an intent with a different creation name does not name it", e: sandboxOwnership({ records: [{ ...intent, creationName: "rw-create-op-9" }] }), verdict: "unrecorded", reason: "no_record" },
  { name: "another instance's label", e: sandboxOwnership({ sandbox: labels({ instance: "inst-b" }) }), verdict: "refused", reason: "foreign_instance" },
  { name: "no instance label", e: sandboxOwnership({ sandbox: labels({ instance: null }) }), verdict: "refused", reason: "foreign_instance" },
  { name: "company label differs from the records", e: sandboxOwnership({ sandbox: labels({ company: "co-2" }) }), verdict: "refused", reason: "labels_mismatch" },
  { name: "operation label differs from the intent", e: sandboxOwnership({ sandbox: labels({ operation: "op-2" }) }), verdict: "refused", reason: "labels_mismatch" },
  { name: "operation label missing", e: sandboxOwnership({ sandbox: labels({ operation: null }), records: [intent] }), verdict: "refused", reason: "labels_mismatch" },
  {
    name: "one of two naming records disagrees",
    e: sandboxOwnership({ records: [intent, { ...lease, companyId: "co-2" }] }),
    verdict: "refused",
    reason: "labels_mismatch",
  },
  { name: "acting through a lease that names it", e: sandboxOwnership({ actingRecord: { type: "lease", id: "l-1" } }), verdict: "owned", reason: "record_matches" },
  {
    name: "acting through a lease whose sandbox id differs (the name was reused)",
    e: sandboxOwnership({ records: [intent, { ...lease, providerLeaseId: "sbx-old" }], actingRecord: { type: "lease", id: "l-1" } }),
    verdict: "refused",
    reason: "not_named_by_acting_record",
  },
  {
    name: "a lease without an operation does not check the operation label",
    e: sandboxOwnership({ sandbox: labels({ operation: null }), records: [{ ...lease, operationId: null }] }),
    verdict: "owned",
    reason: "record_matches",
  },
];

describe("sandbox_ownership (docs/rules.md §2.9)", () => {
  test.each(cases)("$name → $verdict / $reason", ({ e, verdict, reason }) => {
    const v = judgeSandboxOwnership(e);
    expect(v).toMatchObject({ kind: "sandbox_ownership", verdict, reason, code: null });
    expect(sandboxOwnershipResultSchema.parse(v)).toEqual(v);
    // Owned only when every check passed; anything else shows the check that failed.
    expect(v.checks.every((c) => c.ok)).toBe(verdict === "owned");
  });

  test("names the records that name it", () => {
    expect(judgeSandboxOwnership(base).namedBy).toEqual(["intent:op-1", "lease:l-1"]);
    expect(judgeSandboxOwnership(sandboxOwnership({ records: [] })).checks.map((c) => c.name)).toEqual(["instance_label_matches", "recorded"]);
  });
});
