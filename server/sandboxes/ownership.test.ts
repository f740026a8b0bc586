import { describe, expect, it } from "vitest";
import type { ControllerContext } from "../controller/context";
import type { EnvironmentLease, RunStatus, SandboxCreationIntent } from "../db/client";
import { currentProcessIdentity } from "../process/identity";
import type { SandboxView } from "../providers/types";
import { confirmWord } from "../shared/confirm";
import { observerOf } from "../services/observer";
import { reclaimInput } from "./dry-run";
import { judgeSandbox } from "./ownership";

/** judgeSandbox is pure but for the pid probe of a creator on this host. */
const self = currentProcessIdentity();
const observer = observerOf({ identity: self } as ControllerContext);
const NOW = new Date("2026-11-12T12:00:00.000Z");
const hoursAgo = (h: number) => new Date(NOW.getTime() - h * 3600_000);

function sandbox(labels: Record<string, string>, createdAt = hoursAgo(10)): SandboxView {
  return { id: "sbx-1", name: "rw-create-op-1", labels, state: "started", desiredState: null, errorReason: null, createdAt: createdAt.toISOString(), ageSeconds: 0, cpu: 1, memory: 1, disk: 1, hourlyCost: 0.1, toolboxProxyUrl: null };
}
const ours = { "runwarden.instance": "inst-a", "runwarden.company": "co-1", "runwarden.operation": "op-1" };
const run = (status: RunStatus, finishedAt: Date | null = null) => ({ id: "r-1", status, finishedAt });

function lease(over: Partial<EnvironmentLease> & { run?: ReturnType<typeof run> | null } = {}) {
  return {
    id: "l-1",
    runId: "r-1",
    instanceId: "inst-a",
    companyId: "co-1",
    intentId: null,
    provider: "emulator",
    providerLeaseId: "sbx-1",
    sandboxName: "rw-create-op-1",
    remoteCwd: null,
    turn: null,
    acquisitionOutcome: "created",
    status: "expired",
    cleanupStatus: null,
    cleanupAttempts: 0,
    nextCleanupAt: null,
    lastCleanupError: null,
    claimAttemptId: null,
    claimRecord: null,
    fencedUntil: null,
    terminationReceipt: null,
    createdAt: hoursAgo(9),
    updatedAt: hoursAgo(9),
    endedAt: null,
    run: null,
    ...over,
  } as EnvironmentLease & { run: ReturnType<typeof run> | null };
}

function intent(creator: unknown, over: Partial<SandboxCreationIntent> = {}): SandboxCreationIntent {
  return {
    id: "op-1",
    instanceId: "inst-a",
    companyId: "co-1",
    runId: "probe",
    creationName: "rw-create-op-1",
    labels: {},
    creatorBootId: null,
    creator: creator as SandboxCreationIntent["creator"],
    status: "pending",
    attempts: 0,
    lastInspection: null,
    lastInspectedAt: null,
    createdAt: hoursAgo(11),
    settleDeadline: hoursAgo(9),
    nextAttemptAt: new Date(NOW.getTime() + 3600_000),
    resolvedAt: null,
    updatedAt: hoursAgo(11),
    ...over,
  };
}

const records = (over: Partial<Parameters<typeof judgeSandbox>[3]> = {}) => ({ intent: null, leases: [], run: null, companyKnown: true, ...over });
const judge = (s: SandboxView, r: Parameters<typeof judgeSandbox>[3]) => judgeSandbox(observer, "inst-a", s, r, NOW);

describe("ownership verdicts", () => {
  it("an active lease of a live run holds the sandbox: not an orphan", () => {
    expect(judge(sandbox(ours), records({ leases: [lease({ status: "active", run: run("running") })] }))).toMatchObject({ held: true });
  });

  it("an active lease of a finished run does not hold it", () => {
    expect(judge(sandbox(ours), records({ leases: [lease({ status: "active", run: run("failed", hoursAgo(2)) })], run: run("failed", hoursAgo(2)) }))).toMatchObject({ held: false, verdict: "reclaimable" });
  });

  it.each([
    ["another instance's labels", { ...ours, "runwarden.instance": "inst-b" }, records(), "foreign"],
    ["no company label", { "runwarden.instance": "inst-a" }, records(), "unknown"],
    ["a company with no records here", ours, records({ companyKnown: false }), "foreign"],
    ["labels that differ from its intent", { ...ours, "runwarden.company": "co-2" }, records({ intent: intent(null, { status: "committed" }) }), "foreign"],
    ["labels that differ from its lease", { ...ours, "runwarden.company": "co-2" }, records({ leases: [lease()] }), "foreign"],
    ["a live run without a lease on it", ours, records({ run: run("queued") }), "unknown"],
    ["a live run, its expired lease on it", ours, records({ run: run("queued"), leases: [lease()] }), "unknown"],
    ["a retained lease", ours, records({ leases: [lease({ status: "retained" })] }), "unknown"],
    // Labels alone prove nothing (§2.9): another installation on the organization may share them.
    ["our labels and no record naming it", ours, records(), "unrecorded"],
    ["our labels, a finished run's label, no record naming it", ours, records({ run: run("succeeded", hoursAgo(1)) }), "unrecorded"],
    ["only another instance's lease names it", ours, records({ leases: [lease({ instanceId: "inst-b" })] }), "foreign"],
    ["an expired lease of ours names it, labels match", ours, records({ leases: [lease()] }), "reclaimable"],
    ["a lease naming it by another provider id (a reused name)", ours, records({ leases: [lease({ providerLeaseId: "sbx-old" })] }), "unrecorded"],
  ] as const)("%s → %s", (_name, labels, r, verdict) => {
    expect(judge(sandbox(labels), r)).toMatchObject({ held: false, verdict });
  });

  it("a pending intent's creator: alive holds it, exited frees it, unknown holds it until the wait runs out", () => {
    const alive = { bootId: self.bootId, pid: self.pid, startedAt: self.startedAt, pidSpace: self.pidSpace };
    expect(judge(sandbox(ours), records({ intent: intent(alive) }))).toMatchObject({ verdict: "live_creator" });
    const exited = { ...alive, bootId: "b-gone", pid: 999_999 };
    expect(judge(sandbox(ours), records({ intent: intent(exited) }))).toMatchObject({ verdict: "reclaimable" });
    const foreign = { ...alive, pidSpace: "ps-elsewhere" };
    expect(judge(sandbox(ours), records({ intent: intent(foreign) }))).toMatchObject({ verdict: "live_creator" });
    expect(judge(sandbox(ours), records({ intent: intent(foreign, { nextAttemptAt: hoursAgo(1) }) }))).toMatchObject({ verdict: "reclaimable" });
  });
});

describe("when a sandbox became an orphan", () => {
  it("the earlier of its run finishing and its last lease ending, never before it existed", () => {
    const ranOut = judge(sandbox(ours), records({ run: run("succeeded", hoursAgo(2)), leases: [lease({ endedAt: hoursAgo(3) })] }));
    expect(ranOut).toMatchObject({ orphanSince: hoursAgo(3), orphanSinceRule: "lease_ended" });
    expect(judge(sandbox(ours), records({ run: run("succeeded", hoursAgo(2)), leases: [lease({ status: "pending_cleanup" })] }))).toMatchObject({ orphanSince: hoursAgo(2), orphanSinceRule: "run_finished" });
    expect(judge(sandbox(ours, hoursAgo(1)), records({ run: run("succeeded", hoursAgo(2)) }))).toMatchObject({ orphanSince: hoursAgo(1), orphanSinceRule: "run_finished" });
    expect(judge(sandbox(ours, hoursAgo(10)), records({ intent: intent(null, { status: "committed" }) }))).toMatchObject({ orphanSince: hoursAgo(10), orphanSinceRule: "intent_created" });
    expect(judge(sandbox(ours, hoursAgo(4)), records())).toMatchObject({ orphanSince: hoursAgo(4), orphanSinceRule: "created" });
  });
});

describe("reclaim input", () => {
  it("the real reclaim needs the dry run's plan and the typed words naming the count", () => {
    const ok = reclaimInput.safeParse({ dryRun: false, sandboxIds: ["a", "b"], planId: "8d2f1c3e-0000-4000-8000-000000000000", confirm: confirmWord(2) });
    expect(ok.success).toBe(true);
    const wrong = reclaimInput.safeParse({ dryRun: false, sandboxIds: ["a", "b"], planId: "8d2f1c3e-0000-4000-8000-000000000000", confirm: "destroy 1" });
    expect(wrong.error?.issues.map((i) => i.path.join("."))).toEqual(["confirm"]);
    expect(reclaimInput.safeParse({ dryRun: true, sandboxIds: ["a", "a"] }).error?.issues[0]?.path).toEqual(["sandboxIds"]);
  });
});
