import { LIVE_RUN_STATUSES, safeDecide } from "../engine";
import type { CheckResult, RunRecord, TaskReport } from "../shared/wave-report";

/**
 * R1–R7 for one task (docs/rules.md §5), from what the wave collected at its end. The
 * recovery proofs are re-evaluated here with the reference engine, independently of the
 * controllers that made them, so a controller running a broken rule fails R2.
 */

export interface CollectedRun extends RunRecord {
  turnsDone: number;
  turnsPlanned: number;
  outcome: string | null;
  canRetry: boolean;
  nextAction: string | null;
  codesSeen: string[];
}

export interface CollectedProof {
  runId: string;
  kind: string;
  verdict: string;
  evidence: unknown;
}

export interface CollectedLease {
  id: string;
  runId: string | null;
  status: string;
  fencedUntil: string | null;
  providerLeaseId: string | null;
}

export interface CollectedSandbox {
  id: string;
  name: string;
  state: string;
  labels: Record<string, string>;
}

export interface TaskInput {
  key: string;
  taskId: string;
  runs: CollectedRun[];
  proofs: CollectedProof[];
  leases: CollectedLease[];
  /** Sandboxes carrying one of this task's run ids. */
  sandboxes: CollectedSandbox[];
  decoys: Array<{ id: string; kind: string; intact: boolean }>;
  /**
   * The turn numbers each run's agent command wrote, one line per execution, in order (run
   * id → turns); absent when the wave could not read them (an emulator on another host).
   */
  markers?: Record<string, number[]>;
  /**
   * The forecasts the wave took before its kills, of this task's runs (docs/rules.md §2.12), each run's
   * prediction and its check after the restart; absent when the wave took none (R7 not run).
   */
  forecasts?: CollectedForecastRun[];
}

/** One forecast run as stored: its prediction and, after the restart, held / differed / not_restarted (null: not checked). */
export interface CollectedForecastRun {
  forecastId: string;
  runId: string;
  prediction: string;
  path: string | null;
  code: string | null;
  outcome: string | null;
  differences: unknown;
}

const LIVE = new Set<string>(LIVE_RUN_STATUSES);
const RECOVERY_KINDS = new Set(["lease_binding", "bootstrap_restart"]);
/** Codes a recovery refusal ends a run with. */
const RECOVERY_CODES = new Set([
  "native_runner_staged_attachment_recovery_unproven",
  "native_remote_recovery_lease_mismatch",
  "native_continuation_requires_reconciliation",
  "runner_harness_state_mismatch: resumed_unavailable",
  "runner_harness_state_mismatch: resumed_not_suspended",
  "native_restart_recovery_blocked",
  "ambiguous_remote_recovery_evidence",
]);

export function evaluateTask(input: TaskInput): TaskReport {
  const runs = [...input.runs].sort((a, b) => a.createdAt.localeCompare(b.createdAt));
  const successors = new Map<string, number>();
  for (const r of runs) if (r.previousRunId) successors.set(r.previousRunId, (successors.get(r.previousRunId) ?? 0) + 1);
  const final = runs.find((r) => !successors.has(r.id)) ?? runs.at(-1);
  const restartCrossing = runs.some((r) => r.restarts > 0);

  const checks = {
    R1: settled(final, runs),
    R2: selfHealed(runs, input.proofs, successors),
    R3: singleExecution(runs, successors, input.markers),
    R4: noOrphans(input.sandboxes, input.leases, runs),
    R5: nothingHeld(input.leases, runs),
    R6: ownershipSafety(input.decoys),
    ...(input.forecasts ? { R7: forecastHeld(input.forecasts) } : {}),
  };
  return {
    id: input.key,
    taskId: input.taskId,
    passed: Object.values(checks).every((c) => c.ok),
    restartCrossing,
    runs: runs.map(({ id, status, failureCode, previousRunId, restarts, createdAt, startedAt, finishedAt }) => ({
      id,
      status,
      failureCode,
      previousRunId,
      restarts,
      createdAt,
      startedAt,
      finishedAt,
    })),
    failureCodes: [...new Set(runs.flatMap((r) => r.codesSeen))].sort(),
    retriesNeeded: runs.filter((r) => r.previousRunId).length,
    checks,
  };
}

function settled(final: CollectedRun | undefined, runs: CollectedRun[]): CheckResult {
  if (!final) return { ok: false, detail: "the task has no run" };
  const stuck = runs.filter((r) => LIVE.has(r.status)).map((r) => `${r.id} (${r.status})`);
  if (stuck.length) return { ok: false, detail: `still active: ${stuck.join(", ")}`, finalRun: final.id };
  if (final.status === "succeeded") return { ok: true, detail: "succeeded", finalRun: final.id };
  const withRetry = final.status === "failed" && final.outcome === "terminal_failure" && final.canRetry && !!final.nextAction;
  return {
    ok: withRetry,
    detail: withRetry ? `ended ${final.failureCode} with Retry and a next action` : `ended ${final.status} ${final.failureCode ?? ""} without Retry or a next action`.trim(),
    finalRun: final.id,
    failureCode: final.failureCode,
    nextAction: final.nextAction,
  };
}

function selfHealed(runs: CollectedRun[], proofs: CollectedProof[], successors: Map<string, number>): CheckResult {
  const crossing = runs.filter((r) => r.restarts > 0);
  if (crossing.length === 0) return { ok: true, detail: "did not cross a restart" };
  const problems: string[] = [];
  const judged = crossing.map((run) => {
    const recoveries = proofs
      .filter((p) => p.runId === run.id && RECOVERY_KINDS.has(p.kind))
      .map((p) => {
        const reference = safeDecide(p.evidence);
        const expected = reference.ok ? reference.verdict.verdict : `invalid evidence: ${reference.error.message}`;
        if (expected !== p.verdict) problems.push(`${run.id}: ${p.kind} recorded ${p.verdict}, the rules give ${expected}`);
        return { kind: p.kind, recorded: p.verdict, rules: expected };
      });
    const allowed = recoveries.every((r) => r.rules === "admitted" || r.rules === "restart_bootstrap");
    if (allowed && run.status === "failed" && run.failureCode && RECOVERY_CODES.has(run.failureCode)) {
      problems.push(`${run.id}: the rules let it continue, yet it ended ${run.failureCode}`);
    }
    return { runId: run.id, restarts: run.restarts, recoveries, neededRetry: successors.has(run.id) };
  });
  return { ok: problems.length === 0, detail: problems.length ? problems.join("; ") : "every restart was handled as the rules say", runs: judged };
}

/**
 * Each turn's side effect happened exactly once (docs/rules.md, "Turns"), by the lines the agent wrote: a
 * run's turns are 1, 2, … in order with none twice; a run that succeeded ran all its turns;
 * a run that ended early ran its committed turns and at most the one it was in.
 */
export function turnMarkerProblems(run: Pick<CollectedRun, "id" | "status" | "turnsDone" | "turnsPlanned">, lines: number[]): string[] {
  const problems: string[] = [];
  const seen = new Map<number, number>();
  for (const t of lines) seen.set(t, (seen.get(t) ?? 0) + 1);
  for (const [t, n] of seen) if (n > 1) problems.push(`${run.id}: turn ${t} ran ${n} times`);
  if (problems.length) return problems;
  if (!lines.every((t, i) => t === i + 1)) return [`${run.id}: turns ran out of order: ${lines.join(",")}`];
  if (run.status === "succeeded" && lines.length !== run.turnsPlanned) return [`${run.id}: succeeded after ${lines.length} of ${run.turnsPlanned} turns ran`];
  if (lines.length < run.turnsDone) return [`${run.id}: ${run.turnsDone} turns recorded done, ${lines.length} ran`];
  if (lines.length > run.turnsDone + 1) return [`${run.id}: ${lines.length} turns ran, ${run.turnsDone} recorded done`];
  return [];
}

function singleExecution(runs: CollectedRun[], successors: Map<string, number>, markers: Record<string, number[]> | undefined): CheckResult {
  const overlaps: string[] = [];
  for (let i = 0; i < runs.length; i++) {
    for (let j = i + 1; j < runs.length; j++) {
      const a = runs[i]!;
      const b = runs[j]!;
      const aEnd = a.finishedAt ?? "9999";
      if (b.createdAt < aEnd) overlaps.push(`${a.id} and ${b.id}`);
    }
  }
  const doubled = [...successors].filter(([, n]) => n > 1).map(([id, n]) => `${id} has ${n} successors`);
  const turns = markers ? runs.flatMap((r) => turnMarkerProblems(r, markers[r.id] ?? [])) : [];
  const lines = markers ? runs.reduce((n, r) => n + (markers[r.id]?.length ?? 0), 0) : null;
  const ok = overlaps.length === 0 && doubled.length === 0 && turns.length === 0;
  const turnsSaid = lines === null ? "turn markers not read" : `each turn ran once (${lines} marker line(s))`;
  return {
    ok,
    detail: ok ? `${runs.length} run(s), never two active, each Retry one successor; ${turnsSaid}` : [...overlaps.map((o) => `overlap: ${o}`), ...doubled, ...turns].join("; "),
    runs: runs.length,
    ...(markers ? { turnMarkers: Object.fromEntries(runs.map((r) => [r.id, markers[r.id] ?? []])) } : {}),
  };
}

function noOrphans(sandboxes: CollectedSandbox[], leases: CollectedLease[], runs: CollectedRun[]): CheckResult {
  const live = new Set(runs.filter((r) => LIVE.has(r.status)).map((r) => r.id));
  const held = new Set(leases.filter((l) => l.status === "active" && l.runId && live.has(l.runId)).map((l) => l.providerLeaseId));
  const orphans = sandboxes.filter((s) => s.state !== "destroyed" && s.state !== "destroying" && !held.has(s.id));
  return {
    ok: orphans.length === 0,
    detail: orphans.length ? `${orphans.length} sandbox(es) left without a live run's lease` : `${sandboxes.length} sandbox(es) used, none left behind`,
    orphanSandboxes: orphans.map((s) => ({ id: s.id, name: s.name, state: s.state })),
  };
}

function nothingHeld(leases: CollectedLease[], runs: CollectedRun[]): CheckResult {
  const finished = new Set(runs.filter((r) => !LIVE.has(r.status)).map((r) => r.id));
  const held = leases.filter((l) => l.runId && finished.has(l.runId) && (l.status === "active" || l.status === "pending_cleanup" || l.fencedUntil));
  return {
    ok: held.length === 0,
    detail: held.length ? `${held.length} lease(s) still held by finished runs` : `${leases.length} lease(s), all released`,
    held: held.map((l) => ({ id: l.id, status: l.status, fencedUntil: l.fencedUntil })),
  };
}

function ownershipSafety(decoys: TaskInput["decoys"]): CheckResult {
  const touched = decoys.filter((d) => !d.intact);
  return {
    ok: touched.length === 0,
    detail: touched.length ? `decoy(s) touched: ${touched.map((d) => d.kind).join(", ")}` : `${decoys.length} decoy(s) of another instance, company and host untouched`,
    decoys,
  };
}

/**
 * R7 forecast held (docs/rules.md §2.12, §5): every forecast the wave took of this task's runs before a kill
 * held after the restart. A differed run fails it (a defect of the forecast or of recovery);
 * a run the restart never reached (it finished first: not_restarted, or not checked) is
 * reported, not failed. A task none of whose runs a kill interrupted passes with nothing to compare.
 */
function forecastHeld(forecasts: CollectedForecastRun[]): CheckResult {
  if (forecasts.length === 0) return { ok: true, detail: "no forecast was taken of its runs (no kill interrupted them)" };
  const count = (o: string | null) => forecasts.filter((f) => f.outcome === o).length;
  const differed = forecasts.filter((f) => f.outcome === "differed");
  const detail = `${count("held")} held, ${differed.length} differed, ${count("not_restarted")} ended before a restart, ${count(null)} not checked`;
  return {
    ok: differed.length === 0,
    detail: differed.length ? `${detail}: ${differed.map((f) => `${f.runId} forecast ${f.prediction}${f.path ? ` (${f.path})` : f.code ? ` (${f.code})` : ""}, ${JSON.stringify(f.differences)}`).join("; ")}` : detail,
    forecasts,
  };
}
