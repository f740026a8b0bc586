import { z } from "zod";
import { FAULT_NAMES, KILL_KINDS } from "./wave-checks";

/** The wave report: what `--json` writes, `import` reads, and the dashboard shows. */

// The names and the summary are in wave-checks.ts (no zod: the browser imports them).
export * from "./wave-checks";

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
  /** R7 "forecast held" (docs/rules.md §2.12) is absent in reports made before it: not run. */
  checks: z.object({ R1: checkResultSchema, R2: checkResultSchema, R3: checkResultSchema, R4: checkResultSchema, R5: checkResultSchema, R6: checkResultSchema, R7: checkResultSchema.optional() }),
});
export type TaskReport = z.infer<typeof taskReportSchema>;

/** What became of one planned kill (a kill counts only where it landed as planned: docs/waves.md). */
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
  /** The run it interrupted: a run in flight (K1, K2, K5, K15, KD: the one in session on the old build when it was stopped), or the run at the crash point (K4). */
  interruptedRunId: z.string().nullable(),
  /** K4: when the armed controller reached its crash point. */
  crashPointAtMs: z.number().nullable(),
  /** K5, KD: when the other host's (KD: the next build's) controller took the stopped one's run over (absent before K5 existed). */
  takeoverAtMs: z.number().nullable().optional(),
  /** K5, KD: how the taker judged the stopped executor (its recovery's `executorWas`, e.g. `silent_for_7s`). */
  takeoverReason: z.string().nullable().optional(),
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
