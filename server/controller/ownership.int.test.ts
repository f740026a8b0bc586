import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { buildLabels } from "../providers/labels";
import { createTestDatabase, type TestDatabase } from "../test/db";
import { judgeOwnership, loadOwnershipRecords } from "./ownership";
import { json } from "./records";

/** The records behind the ownership proof (docs/rules.md §2.9), read in one query (docs/decisions/0003-cost-at-scale.md). */

let t: TestDatabase;

beforeAll(async () => {
  t = await createTestDatabase(inject("adminUrl"), inject("templateDatabase"), inject("runPrefix"));
  const intent = (id: string, instanceId: string, name: string) =>
    t.db.sandboxCreationIntent.create({
      data: { id, instanceId, companyId: "co-1", runId: `probe-${id}`, creationName: name, labels: json({}), creator: json({}), settleDeadline: new Date(), nextAttemptAt: new Date() },
    });
  const lease = (id: string, instanceId: string, by: { providerLeaseId?: string; sandboxName?: string; intentId?: string }, createdAt: string) =>
    t.db.environmentLease.create({ data: { id, instanceId, companyId: "co-1", provider: "emulator", acquisitionOutcome: "created", createdAt: new Date(createdAt), ...by } });
  await intent("op-a", "inst-a", "rw-create-op-a");
  await intent("op-b", "inst-b", "rw-create-op-b");
  // Out of creation order on purpose: the records come oldest first.
  await lease("00000000-0000-4000-8000-000000000002", "inst-a", { providerLeaseId: "sbx-a", sandboxName: "rw-create-op-a", intentId: "op-a" }, "2030-01-02T00:00:00Z");
  await lease("00000000-0000-4000-8000-000000000001", "inst-a", { sandboxName: "rw-create-op-a" }, "2030-01-01T00:00:00Z");
  await lease("00000000-0000-4000-8000-000000000003", "inst-b", { providerLeaseId: "sbx-a" }, "2030-01-03T00:00:00Z");
  await lease("00000000-0000-4000-8000-000000000004", "inst-a", { providerLeaseId: "sbx-other", sandboxName: "rw-create-op-other" }, "2030-01-04T00:00:00Z");
});

afterAll(async () => {
  await t?.drop();
});

describe("loadOwnershipRecords", () => {
  it("gives each sandbox its intent by exact name, then every lease naming it by id or name (any instance), oldest first", async () => {
    const records = await loadOwnershipRecords(t.db, [
      { id: "sbx-a", name: "rw-create-op-a", labels: {} },
      { id: "sbx-b", name: "rw-create-op-b", labels: {} },
      { id: "sbx-none", name: "rw-create-op-none", labels: {} },
    ]);
    expect(records.get("sbx-a")).toEqual([
      { type: "intent", id: "op-a", instanceId: "inst-a", companyId: "co-1", creationName: "rw-create-op-a" },
      { type: "lease", id: "00000000-0000-4000-8000-000000000001", instanceId: "inst-a", companyId: "co-1", providerLeaseId: null, sandboxName: "rw-create-op-a", operationId: null },
      { type: "lease", id: "00000000-0000-4000-8000-000000000002", instanceId: "inst-a", companyId: "co-1", providerLeaseId: "sbx-a", sandboxName: "rw-create-op-a", operationId: "op-a" },
      { type: "lease", id: "00000000-0000-4000-8000-000000000003", instanceId: "inst-b", companyId: "co-1", providerLeaseId: "sbx-a", sandboxName: null, operationId: null },
    ]);
    expect(records.get("sbx-b")).toEqual([{ type: "intent", id: "op-b", instanceId: "inst-b", companyId: "co-1", creationName: "rw-create-op-b" }]);
    expect(records.get("sbx-none")).toEqual([]);
    expect((await loadOwnershipRecords(t.db, [])).size).toBe(0);
  });

  it("proves ownership only for this instance's records with matching labels", async () => {
    const labels = buildLabels({ instanceId: "inst-a", companyId: "co-1", operationId: "op-a" });
    const mine = await judgeOwnership(t.db, "inst-a", { id: "sbx-a", name: "rw-create-op-a", labels }, { type: "intent", id: "op-a" });
    expect(mine.verdict.verdict).toBe("owned");
    const theirs = await judgeOwnership(t.db, "inst-b", { id: "sbx-b", name: "rw-create-op-b", labels: buildLabels({ instanceId: "inst-a", companyId: "co-1", operationId: "op-b" }) });
    expect(theirs.verdict.verdict).not.toBe("owned");
  });
});
