import type { KillRecord, WaveReport } from "./wave-report";

/**
 * The wave report's names and its summary: what the dashboard's wave pages import. No zod here,
 * so the report's schemas (wave-report.ts) stay out of the browser's bundle (docs/decisions/0003-cost-at-scale.md).
 */

/**
 * The kills and faults a wave plans (server/waves/plan.ts) and its report records. KD is a
 * rolling deploy to the next build (docs/rules.md §5): named with a letter, it is no
 * numbered failure mode of its own.
 */
export const KILL_KINDS = ["K1", "K2", "K4", "K5", "K15", "KD"] as const;
export type KillKind = (typeof KILL_KINDS)[number];
/**
 * Faults a wave injects into a task's run: the runner's own (bind, reject, unconnected), a late
 * create, and the provider's as Daytona has them (docs/daytona.md): `slow_start` (a create slower than
 * the controller waits), `rate_limit` (429s), `outage` (the provider answering 503 to every
 * call for a stretch while the first kill lands) and `archive` (the run's sandbox archived while
 * no controller runs).
 */
export const FAULT_NAMES = ["bind", "reject", "late", "unconnected", "slow_start", "rate_limit", "outage", "archive"] as const;
export type FaultName = (typeof FAULT_NAMES)[number];

/** R7 came later than the others (docs/waves.md): a report without it (stored or imported before) did not run it — shown as "not run", never as a failure. */
export const CHECK_IDS = ["R1", "R2", "R3", "R4", "R5", "R6", "R7"] as const;
export type CheckId = (typeof CHECK_IDS)[number];

export const CHECK_TITLES: Record<CheckId, string> = {
  R1: "settled",
  R2: "self-healed",
  R3: "single execution",
  R4: "no orphans",
  R5: "nothing held",
  R6: "ownership safety",
  R7: "forecast held",
};

export interface WaveSummary {
  tasks: number;
  tasksPassed: number;
  /** `notRun`: tasks whose report has no such check (R7 in reports made before it). */
  checks: Record<CheckId, { pass: number; fail: number; notRun: number }>;
  failureCodes: Record<string, number>;
  retries: number;
  orphans: number;
  /** Per kill kind, planned and landed as planned. */
  kills: Partial<Record<(typeof KILL_KINDS)[number], { planned: number; landed: number }>>;
  faults: { planned: number; fired: number };
}

/** A wave passes when every task passes every check, nothing is left, and every planned kill and fault happened. */
export function wavePassed(report: Pick<WaveReport, "tasks" | "orphanSandboxes" | "kills" | "faults">): boolean {
  return (
    report.tasks.every((t) => t.passed) &&
    report.orphanSandboxes.length === 0 &&
    report.kills.every((k) => k.landed) &&
    report.faults.every((f) => f.fired)
  );
}

export function summarise(report: Pick<WaveReport, "tasks" | "orphanSandboxes"> & Partial<Pick<WaveReport, "kills" | "faults">>): WaveSummary {
  const checks = Object.fromEntries(CHECK_IDS.map((c) => [c, { pass: 0, fail: 0, notRun: 0 }])) as WaveSummary["checks"];
  const failureCodes: Record<string, number> = {};
  let retries = 0;
  for (const task of report.tasks) {
    for (const c of CHECK_IDS) {
      const result = task.checks[c];
      checks[c][result === undefined ? "notRun" : result.ok ? "pass" : "fail"] += 1;
    }
    for (const code of task.failureCodes) failureCodes[code] = (failureCodes[code] ?? 0) + 1;
    retries += task.retriesNeeded;
  }
  return {
    tasks: report.tasks.length,
    tasksPassed: report.tasks.filter((t) => t.passed).length,
    checks,
    failureCodes,
    retries,
    orphans: report.orphanSandboxes.length,
    kills: killCounts(report.kills ?? []),
    faults: { planned: (report.faults ?? []).length, fired: (report.faults ?? []).filter((f) => f.fired).length },
  };
}

export function killCounts(kills: readonly KillRecord[]): WaveSummary["kills"] {
  const out: WaveSummary["kills"] = {};
  for (const k of kills) {
    const entry = (out[k.kind] ??= { planned: 0, landed: 0 });
    entry.planned += 1;
    if (k.landed) entry.landed += 1;
  }
  return out;
}

/** "K1 1/1 · K4 0/1", in the catalogue's kill order. */
export function describeKills(counts: WaveSummary["kills"]): string {
  const parts = KILL_KINDS.flatMap((kind) => {
    const c = counts[kind];
    return c ? [`${kind} ${c.landed}/${c.planned}`] : [];
  });
  return parts.join(" · ") || "none planned";
}
