import { z } from "zod";
import { FAILURE_CODES, OUTCOME_CLASSES } from "./catalogue";
import { catalogueRowSchema } from "./catalogue-schemas";

/**
 * Verdict shapes (docs/evidence.md "Output"). They are schemas, not only types, so the tRPC
 * procedure validates what it returns and a stored proof can be read back safely.
 */

const scalarSchema = z.union([z.string(), z.number(), z.boolean(), z.null()]);

export const checkSchema = z.object({
  name: z.string(),
  ok: z.boolean(),
  expected: scalarSchema.optional(),
  actual: scalarSchema.optional(),
});
export type Check = z.infer<typeof checkSchema>;

const failureCodeSchema = z.enum(FAILURE_CODES);

/**
 * Catalogue fields of the verdict's code (the catalogue row's own schemas); all null (and no
 * Retry) when there is no code. `satisfies` makes a new catalogue field a type error here.
 */
const row = catalogueRowSchema.shape;
const failureTail = {
  outcome: row.outcome.nullable(),
  owner: row.owner.nullable(),
  canRetry: row.canRetry,
  message: row.message.nullable(),
  nextAction: row.nextAction.nullable(),
} satisfies Record<keyof typeof row, z.ZodType>;

export const PROCESS_EXIT_VERDICTS = ["exited", "alive", "unknown"] as const;
export const PROCESS_EXIT_REASONS = [
  "unidentified",
  "foreign_pid_space",
  "self",
  "unreadable",
  "pid_gone",
  "pid_recycled",
  "same_process",
] as const;

/** A nested process_exit judgement, as creation_intent and teardown_fence report it. */
export const processJudgementSchema = z.object({
  verdict: z.enum(PROCESS_EXIT_VERDICTS),
  reason: z.enum(PROCESS_EXIT_REASONS),
});
export type ProcessJudgement = z.infer<typeof processJudgementSchema>;

export const leaseBindingResultSchema = z.object({
  kind: z.literal("lease_binding"),
  verdict: z.enum(["admitted", "refused"]),
  code: failureCodeSchema.nullable(),
  reason: z.string(),
  checks: z.array(checkSchema),
  ...failureTail,
  /** Where a refused run rests (docs/rules.md §2.1); null when admitted. */
  continuation: catalogueRowSchema.extend({ code: failureCodeSchema }).nullable(),
});
export type LeaseBindingResult = z.infer<typeof leaseBindingResultSchema>;

export const bootstrapRestartResultSchema = z.object({
  kind: z.literal("bootstrap_restart"),
  verdict: z.enum(["restart_bootstrap", "refused"]),
  code: failureCodeSchema.nullable(),
  reason: z.string(),
  checks: z.array(checkSchema),
  ...failureTail,
  /** How "never touched" was proven; null when refused. */
  proofSource: z.enum(["local_proof", "never_connected"]).nullable(),
  /** Admitted: the old runner root is moved aside, kept for inspection. */
  moveRunnerRootAside: z.boolean(),
});
export type BootstrapRestartResult = z.infer<typeof bootstrapRestartResultSchema>;

export const startupFailureResultSchema = z.object({
  kind: z.literal("startup_failure"),
  verdict: z.enum(OUTCOME_CLASSES),
  code: failureCodeSchema,
  reason: z.string(),
  checks: z.array(checkSchema),
  ...catalogueRowSchema.shape,
  /** Seconds until the same run is tried again; null when nothing is retried automatically. */
  retryAfterSeconds: z.number().int().nullable(),
});
export type StartupFailureResult = z.infer<typeof startupFailureResultSchema>;

export const processExitResultSchema = z.object({
  kind: z.literal("process_exit"),
  verdict: z.enum(PROCESS_EXIT_VERDICTS),
  code: z.null(),
  reason: z.enum(PROCESS_EXIT_REASONS),
  checks: z.array(checkSchema),
});
export type ProcessExitResult = z.infer<typeof processExitResultSchema>;

export const CREATION_INTENT_VERDICTS = [
  "wait",
  "inspect",
  "commit",
  "reclaim",
  "stay_pending",
  "resolve_absent",
  "manual_reconciliation",
] as const;

export const creationIntentResultSchema = z.object({
  kind: z.literal("creation_intent"),
  verdict: z.enum(CREATION_INTENT_VERDICTS),
  code: z.null(),
  reason: z.string(),
  checks: z.array(checkSchema),
  /** The creator judged by process_exit; null when the order never needed it. */
  creatorVerdict: processJudgementSchema.nullable(),
});
export type CreationIntentResult = z.infer<typeof creationIntentResultSchema>;

export const TEARDOWN_FENCE_REASONS = [
  "fence_expired",
  "claimer_exited",
  "claimer_stopped",
  "claimer_silent",
  "attempt_superseded",
  "claimer_alive",
  "claimer_unknown",
  "not_fenced",
] as const;

export const teardownFenceResultSchema = z.object({
  kind: z.literal("teardown_fence"),
  verdict: z.enum(["release", "keep"]),
  code: z.null(),
  reason: z.enum(TEARDOWN_FENCE_REASONS),
  checks: z.array(checkSchema),
  /** The claimer judged by process_exit; null when the order never needed it. */
  claimerVerdict: processJudgementSchema.nullable(),
});
export type TeardownFenceResult = z.infer<typeof teardownFenceResultSchema>;

export const SANDBOX_OWNERSHIP_VERDICTS = ["owned", "unrecorded", "refused"] as const;
export const SANDBOX_OWNERSHIP_REASONS = ["record_matches", "no_record", "labels_mismatch", "foreign_instance", "not_named_by_acting_record"] as const;

export const sandboxOwnershipResultSchema = z.object({
  kind: z.literal("sandbox_ownership"),
  verdict: z.enum(SANDBOX_OWNERSHIP_VERDICTS),
  code: z.null(),
  reason: z.enum(SANDBOX_OWNERSHIP_REASONS),
  checks: z.array(checkSchema),
  /** The records of this instance that name exactly this sandbox, as `type:id`. */
  namedBy: z.array(z.string()),
});
export type SandboxOwnershipResult = z.infer<typeof sandboxOwnershipResultSchema>;

export const turnResultSchema = z.object({
  kind: z.literal("turn_result"),
  verdict: z.enum(["turn_succeeded", "turn_failed"]),
  code: failureCodeSchema.nullable(),
  reason: z.enum(["exit_zero", "exit_non_zero", "other_turn", "turn_timed_out", "no_record_within_deadline"]),
  checks: z.array(checkSchema),
  ...failureTail,
});
export type TurnResult = z.infer<typeof turnResultSchema>;

export const recoveryAttemptResultSchema = z.object({
  kind: z.literal("recovery_attempt"),
  /** wait: the provider is unavailable (§2.8): the attempt is not counted, the run waits for it. */
  verdict: z.enum(["try_again", "give_up", "wait"]),
  code: failureCodeSchema.nullable(),
  reason: z.enum(["attempts_left", "attempts_exhausted", "provider_unavailable"]),
  checks: z.array(checkSchema),
  ...failureTail,
  /** Whether this attempt counts toward the bound (false on wait). */
  counted: z.boolean().default(true),
  /** try_again: not before this time (doubling back-off, capped); wait: the next probe or the provider's own Retry-After; null on give_up. */
  notBefore: z.string().nullable(),
  backoffMs: z.number().int().nullable(),
});
export type RecoveryAttemptResult = z.infer<typeof recoveryAttemptResultSchema>;

export const RECOVERY_ROUTES = [
  "restart_acquire",
  "finish",
  "next_turn_sandbox",
  "read_runner",
  "restart_bootstrap_fresh",
  "recover_bootstrap",
  "recover_session",
  "refused",
] as const;
export type RecoveryRoute = (typeof RECOVERY_ROUTES)[number];

export const recoveryRouteResultSchema = z.object({
  kind: z.literal("recovery_route"),
  verdict: z.enum(RECOVERY_ROUTES),
  code: failureCodeSchema.nullable(),
  reason: z.string(),
  checks: z.array(checkSchema),
  ...failureTail,
  /** The recovery mode the run carries on in (restart_acquire, next_turn_sandbox, finish, restart_bootstrap_fresh). */
  recoveryMode: z.enum(["bootstrap_retry", "exact_checkpoint_resume"]).nullable(),
});
export type RecoveryRouteResult = z.infer<typeof recoveryRouteResultSchema>;

export const stoppedSandboxResultSchema = z.object({
  kind: z.literal("stopped_sandbox"),
  verdict: z.enum(["proceed", "wait", "start_sandbox", "end_run"]),
  code: failureCodeSchema.nullable(),
  reason: z.enum(["sandbox_started", "sandbox_in_transition", "sandbox_startable", "sandbox_gone", "sandbox_not_startable", "start_attempts_exhausted"]),
  checks: z.array(checkSchema),
  ...failureTail,
});
export type StoppedSandboxResult = z.infer<typeof stoppedSandboxResultSchema>;

export const runnerResumeResultSchema = z.object({
  kind: z.literal("runner_resume"),
  /** reattach: the runner is alive; resume: start it again on its own state; refused: end the run. */
  verdict: z.enum(["reattach", "resume", "refused"]),
  code: failureCodeSchema.nullable(),
  reason: z.enum(["runner_alive", "runner_dead_resumable", "no_runner_state", "state_not_this_run", "never_connected", "lifecycle_not_resumable", "turn_in_flight", "process_unknown"]),
  checks: z.array(checkSchema),
  ...failureTail,
});
export type RunnerResumeResult = z.infer<typeof runnerResumeResultSchema>;

export const verdictSchema = z.discriminatedUnion("kind", [
  leaseBindingResultSchema,
  bootstrapRestartResultSchema,
  startupFailureResultSchema,
  processExitResultSchema,
  creationIntentResultSchema,
  teardownFenceResultSchema,
  sandboxOwnershipResultSchema,
  turnResultSchema,
  recoveryAttemptResultSchema,
  recoveryRouteResultSchema,
  stoppedSandboxResultSchema,
  runnerResumeResultSchema,
]);
export type Verdict = z.infer<typeof verdictSchema>;
