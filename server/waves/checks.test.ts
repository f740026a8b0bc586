import { describe, expect, it } from "vitest";
import { evaluateTask, turnMarkerProblems, type CollectedRun, type TaskInput } from "./checks";

const t = (s: number) => new Date(Date.UTC(2026, 10, 12, 1, 0, s)).toISOString();

function run(over: Partial<CollectedRun> = {}): CollectedRun {
  return {
    id: "r1",
    status: "succeeded",
    turnsDone: 3,
    turnsPlanned: 3,
    outcome: null,
    failureCode: null,
    canRetry: false,
    nextAction: null,
    previousRunId: null,
    restarts: 0,
    createdAt: t(0),
    startedAt: t(1),
    finishedAt: t(10),
    codesSeen: [],
    ...over,
  };
}

const base: TaskInput = { key: "t01", taskId: "w-t01", runs: [run()], proofs: [], leases: [], sandboxes: [], decoys: [{ id: "d1", kind: "another_instance", intact: true }] };

const bindingEvidence = (outcome: string) => ({
  kind: "lease_binding",
  path: "staged_attachment",
  claim: { runId: "r1", remote: { providerLeaseId: "sbx-1", remoteCwd: "/w" } },
  target: { runId: "r1", providerLeaseId: "sbx-1", remoteCwd: "/w", acquisitionOutcome: outcome },
  // The staged path proves every staged check (§2.1).
  staged: { headerReadable: true, sourceRunMatches: true, templateDigestMatches: true, runnerIdentityMatches: true },
});

describe("R1–R6", () => {
  it("passes a run that succeeded and left nothing behind", () => {
    const report = evaluateTask(base);
    expect(report.passed).toBe(true);
    expect(Object.values(report.checks).every((c) => c.ok)).toBe(true);
  });

  it("R1 fails a task left active, or ended without Retry", () => {
    expect(evaluateTask({ ...base, runs: [run({ status: "running", finishedAt: null })] }).checks.R1.ok).toBe(false);
    const held = evaluateTask({ ...base, runs: [run({ status: "failed", outcome: "terminal_failure", failureCode: "ambiguous_remote_recovery_evidence", canRetry: false, nextAction: "ask an operator" })] });
    expect(held.checks.R1.ok).toBe(false);
    const withRetry = evaluateTask({ ...base, runs: [run({ status: "failed", outcome: "terminal_failure", failureCode: "native_provider_startup_rejected", canRetry: true, nextAction: "fix, then Retry" })] });
    expect(withRetry.checks.R1.ok).toBe(true);
  });

  it("R2 fails when a recorded recovery verdict is not what the rules give", () => {
    const report = evaluateTask({
      ...base,
      runs: [run({ restarts: 1, status: "failed", outcome: "terminal_failure", failureCode: "native_runner_staged_attachment_recovery_unproven", canRetry: true, nextAction: "Retry" })],
      proofs: [{ runId: "r1", kind: "lease_binding", verdict: "refused", evidence: bindingEvidence("created") }],
    });
    expect(report.checks.R2.ok).toBe(false);
    expect(report.checks.R2.detail).toMatch(/recorded refused, the rules give admitted/);
  });

  it("R2 accepts a refusal the rules also give", () => {
    const report = evaluateTask({
      ...base,
      runs: [run({ restarts: 1, status: "failed", outcome: "terminal_failure", failureCode: "native_runner_staged_attachment_recovery_unproven", canRetry: true, nextAction: "Retry" })],
      proofs: [{ runId: "r1", kind: "lease_binding", verdict: "refused", evidence: bindingEvidence("replacement") }],
    });
    expect(report.checks.R2.ok).toBe(true);
  });

  it("R3 fails two active runs at once and two successors of one Retry", () => {
    const overlap = evaluateTask({ ...base, runs: [run(), run({ id: "r2", createdAt: t(5), finishedAt: t(20) })] });
    expect(overlap.checks.R3.ok).toBe(false);
    const twins = evaluateTask({
      ...base,
      runs: [run({ status: "failed", finishedAt: t(2) }), run({ id: "r2", previousRunId: "r1", createdAt: t(3) }), run({ id: "r3", previousRunId: "r1", createdAt: t(11) })],
    });
    expect(twins.checks.R3.detail).toMatch(/r1 has 2 successors/);
  });

  it("R3 fails a turn whose side effect happened twice, or a succeeded run missing a turn, by the agent's marker lines", () => {
    expect(evaluateTask({ ...base, markers: { r1: [1, 2, 3] } }).checks.R3).toMatchObject({ ok: true, detail: expect.stringMatching(/each turn ran once \(3 marker line\(s\)\)/) });
    expect(evaluateTask({ ...base, markers: { r1: [1, 2, 2, 3] } }).checks.R3).toMatchObject({ ok: false, detail: "r1: turn 2 ran 2 times" });
    expect(evaluateTask({ ...base, markers: { r1: [1, 2] } }).checks.R3).toMatchObject({ ok: false, detail: "r1: succeeded after 2 of 3 turns ran" });
    expect(evaluateTask({ ...base, markers: {} }).checks.R3.ok).toBe(false);
    // Without markers (an emulator on another host) R3 says so and judges the runs alone.
    expect(evaluateTask(base).checks.R3.detail).toMatch(/turn markers not read/);
  });

  it("a run that ended early ran its committed turns and at most the one it was in", () => {
    const ended = { id: "r1", status: "failed", turnsDone: 2, turnsPlanned: 4 };
    expect(turnMarkerProblems(ended, [1, 2])).toEqual([]);
    expect(turnMarkerProblems(ended, [1, 2, 3])).toEqual([]);
    expect(turnMarkerProblems(ended, [1])).toEqual(["r1: 2 turns recorded done, 1 ran"]);
    expect(turnMarkerProblems(ended, [1, 2, 3, 4])).toEqual(["r1: 4 turns ran, 2 recorded done"]);
    expect(turnMarkerProblems(ended, [2, 1])).toEqual(["r1: turns ran out of order: 2,1"]);
  });

  it("R4 fails a sandbox of the task left without a live run's lease", () => {
    const report = evaluateTask({ ...base, sandboxes: [{ id: "sbx-9", name: "rw-create-9", state: "started", labels: {} }] });
    expect(report.checks.R4.ok).toBe(false);
    expect(evaluateTask({ ...base, sandboxes: [{ id: "sbx-9", name: "rw-create-9", state: "destroyed", labels: {} }] }).checks.R4.ok).toBe(true);
  });

  it("R5 fails a lease still held or fenced by a finished run", () => {
    expect(evaluateTask({ ...base, leases: [{ id: "l1", runId: "r1", status: "pending_cleanup", fencedUntil: null, providerLeaseId: "s" }] }).checks.R5.ok).toBe(false);
    expect(evaluateTask({ ...base, leases: [{ id: "l1", runId: "r1", status: "expired", fencedUntil: t(99), providerLeaseId: "s" }] }).checks.R5.ok).toBe(false);
    expect(evaluateTask({ ...base, leases: [{ id: "l1", runId: "r1", status: "expired", fencedUntil: null, providerLeaseId: "s" }] }).checks.R5.ok).toBe(true);
  });

  it("R6 fails when a decoy was touched", () => {
    expect(evaluateTask({ ...base, decoys: [{ id: "d1", kind: "another_company", intact: false }] }).checks.R6.ok).toBe(false);
  });
});

describe("R7 forecast held", () => {
  const fc = (outcome: string | null, differences: unknown = []) => ({ forecastId: "f1", runId: "r1", prediction: "continues", path: "reattach", code: null, outcome, differences });

  it("is not run (absent) when the wave took no forecast: reports made before R7", () => {
    const report = evaluateTask(base);
    expect(report.checks.R7).toBeUndefined();
    expect(report.passed).toBe(true);
  });
  it("passes when every forecast run held, and says what was not restarted or not checked", () => {
    const report = evaluateTask({ ...base, forecasts: [fc("held"), { ...fc("not_restarted"), runId: "r2" }, { ...fc(null), runId: "r3" }] });
    expect(report.checks.R7).toMatchObject({ ok: true, detail: "1 held, 0 differed, 1 ended before a restart, 1 not checked" });
    expect(report.passed).toBe(true);
  });
  it("passes with nothing to compare when no kill interrupted the task's runs", () => {
    expect(evaluateTask({ ...base, forecasts: [] }).checks.R7).toMatchObject({ ok: true });
  });
  it("fails the task when a forecast run differed from its restart", () => {
    const report = evaluateTask({ ...base, forecasts: [fc("differed", [{ field: "prediction", forecast: "continues", actual: "ends" }])] });
    expect(report.checks.R7?.ok).toBe(false);
    expect(report.checks.R7?.detail).toMatch(/0 held, 1 differed.*r1 forecast continues \(reattach\)/);
    expect(report.passed).toBe(false);
  });
});
