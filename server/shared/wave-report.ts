import { z } from "zod";

/** The wave report: what `--json` writes, `import` reads, and the dashboard shows. */

/** The kills and faults a wave plans (server/waves/plan.ts) and its report records. */
export const KILL_KINDS = ["K1", "K2", "K4", "K15"] as const;
export type KillKind = (typeof KILL_KINDS)[number];
export const FAULT_NAMES = ["bind", "reject", "late", "unconnected"] as const;
export type FaultName = (typeof FAULT_NAMES)[number];

export const CHECK_IDS = ["R1", "R2", "R3", "R4", "R5", "R6"] as const;
export type CheckId = (typeof CHECK_IDS)[number];

export const CHECK_TITLES: Record<CheckId, string> = {
  R1: "settled",
  R2: "self-healed",
  R3: "single execution",
  R4: "no orphans",
  R5: "nothing held",
  R6: "ownership safety",
};

const checkResultSchema = z.looseObject({ ok: z.boolean(), detail: z.string().optional() });
export type CheckResult = z.infer<typeof checkResultSchema>;

const plannedTaskSchema = z.object({
  key: z.string(),
  agent: z.string(),
  provider: z.enum(["codex", "claude"]),
  target: z.enum(["remote", "local"]),
  sandboxMode: z.enum(["per_turn", "warm"]),
  turns: z.number().int(),
  faults: z.array(z.enum(FAULT_NAMES)),
});

export const planSchema = z.object({
  seed: z.number().int(),
  tasks: z.array(plannedTaskSchema),
  kills: z.array(z.object({ kind: z.enum(KILL_KINDS), atMs: z.number(), crashAt: z.enum(["after_create", "during_teardown_claim"]).optional() })),
  concurrency: z.number().int(),
});

export const runRecordSchema = z.object({
  id: z.string(),
  status: z.string(),
  failureCode: z.string().nullable(),
  previousRunId: z.string().nullable(),
  restarts: z.number().int(),
  createdAt: z.string(),
  startedAt: z.string().nullable(),
  finishedAt: z.string().nullable(),
});
export type RunRecord = z.infer<typeof runRecordSchema>;

export const taskReportSchema = z.object({
  id: z.string(),
  taskId: z.string(),
  passed: z.boolean(),
  restartCrossing: z.boolean(),
  runs: z.array(runRecordSchema),
  failureCodes: z.array(z.string()),
  retriesNeeded: z.number().int().min(0),
  checks: z.object({ R1: checkResultSchema, R2: checkResultSchema, R3: checkResultSchema, R4: checkResultSchema, R5: checkResultSchema, R6: checkResultSchema }),
});
export type TaskReport = z.infer<typeof taskReportSchema>;

/** What became of one planned kill (issue 17: a kill counts only where it landed as planned). */
export const killRecordSchema = z.object({
  kind: z.enum(KILL_KINDS),
  crashAt: z.enum(["after_create", "during_teardown_claim"]).optional(),
  /** The planned delay after the controller it targets was ready. */
  afterReadyMs: z.number(),
  landed: z.boolean(),
  /** When it fired, on the wave's clock; null when it never did. */
  firedAtMs: z.number().nullable(),
  /** The controller it stopped. */
  targetPid: z.number().int().nullable(),
  /** The run it interrupted: a run in flight (K1, K2, K15), or the run at the crash point (K4). */
  interruptedRunId: z.string().nullable(),
  /** K4: when the armed controller reached its crash point. */
  crashPointAtMs: z.number().nullable(),
  /** The controller started after it. */
  restartPid: z.number().int().nullable(),
  detail: z.string(),
});
export type KillRecord = z.infer<typeof killRecordSchema>;

/** Whether one planned fault fired, and on which run. */
export const faultRecordSchema = z.object({
  task: z.string(),
  fault: z.enum(FAULT_NAMES),
  runId: z.string().nullable(),
  fired: z.boolean(),
  /** How many times the provider applied it. */
  uses: z.number().int().min(0),
  detail: z.string(),
});
export type FaultRecord = z.infer<typeof faultRecordSchema>;

export const eventSchema = z.object({
  atMs: z.number(),
  kind: z.string(),
  detail: z.string(),
});
export type WaveEvent = z.infer<typeof eventSchema>;

export const waveReportSchema = z.object({
  id: z.string().regex(/^w-\d{8}T\d{6}-s\d+$/, "expected a wave id like w-20261112T010800-s6402"),
  seed: z.number().int(),
  instanceId: z.string(),
  /** The company whose runs the wave made (the company that sees it). */
  companyId: z.string().min(1).default("co-wave"),
  startedAt: z.iso.datetime(),
  finishedAt: z.iso.datetime(),
  plan: planSchema,
  passed: z.boolean(),
  orphanSandboxes: z.array(z.looseObject({ id: z.string(), name: z.string() })),
  reclaims: z.array(z.object({ intentId: z.string(), sandboxId: z.string().nullable(), seconds: z.number() })),
  decoys: z.array(z.looseObject({ id: z.string(), kind: z.string(), intact: z.boolean() })),
  events: z.array(eventSchema),
  tasks: z.array(taskReportSchema).min(1),
  /** Absent in reports made before kills were tracked: then nothing is known of them. */
  kills: z.array(killRecordSchema).default([]),
  faults: z.array(faultRecordSchema).default([]),
});
export type WaveReport = z.infer<typeof waveReportSchema>;

export interface WaveSummary {
  tasks: number;
  tasksPassed: number;
  checks: Record<CheckId, { pass: number; fail: number }>;
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
  const checks = Object.fromEntries(CHECK_IDS.map((c) => [c, { pass: 0, fail: 0 }])) as WaveSummary["checks"];
  const failureCodes: Record<string, number> = {};
  let retries = 0;
  for (const task of report.tasks) {
    for (const c of CHECK_IDS) checks[c][task.checks[c].ok ? "pass" : "fail"] += 1;
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
