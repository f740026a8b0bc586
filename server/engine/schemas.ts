import { z } from "zod";

/**
 * Evidence bundles (docs/evidence.md). `z.object` strips unknown keys, so extra fields in an
 * exported bundle are ignored rather than rejected.
 *
 * Where a field is optional, leaving it out is the fail-closed reading (no proof, no
 * inspection yet, no record); fields whose absence would let something be released or
 * destroyed are required.
 */

/** ISO-8601 with `Z` or an offset: a time without a zone cannot be compared safely. */
export const isoTimeSchema = z.iso.datetime({ offset: true });
const idSchema = z.string().min(1);

export const EVIDENCE_KINDS = [
  "lease_binding",
  "bootstrap_restart",
  "startup_failure",
  "process_exit",
  "creation_intent",
  "teardown_fence",
  "sandbox_ownership",
  "turn_result",
  "recovery_attempt",
  "recovery_route",
  "stopped_sandbox",
  "runner_resume",
] as const;
export type EvidenceKind = (typeof EVIDENCE_KINDS)[number];

// ---- shared shapes ----------------------------------------------------------------

export const identitySchema = z.object({
  bootId: idSchema,
  pid: z.number().int().positive(),
  startedAt: isoTimeSchema,
  /** Kernel start time in clock ticks since boot: when both sides carry it, it decides (§2.4). */
  startTicks: z.number().int().nonnegative().nullish(),
  pidSpace: idSchema,
});
export type Identity = z.infer<typeof identitySchema>;

/** A stored identity may predate identity recording, or be cut short: every field optional. */
export const partialIdentitySchema = z.object({
  bootId: idSchema.nullish(),
  pid: z.number().int().positive().nullish(),
  startedAt: isoTimeSchema.nullish(),
  startTicks: z.number().int().nonnegative().nullish(),
  pidSpace: idSchema.nullish(),
});
export type PartialIdentity = z.infer<typeof partialIdentitySchema>;

/**
 * A probe of the recorded pid on the observer's host. Null (not probed) reads as unreadable.
 * A probe that could not read the process table (`readable` false) may give `pidLive` as null
 * (docs/evidence.md); a readable one says whether the pid is live.
 */
export const probeSchema = z
  .object({
    readable: z.boolean(),
    pidLive: z.boolean().nullable(),
    liveStartedAt: isoTimeSchema.nullish(),
    liveStartTicks: z.number().int().nonnegative().nullish(),
  })
  .refine((p) => !p.readable || p.pidLive !== null, { message: "a readable probe must say whether the pid is live (pidLive true or false)", path: ["pidLive"] });
export type Probe = z.infer<typeof probeSchema>;

export const ACQUISITION_OUTCOMES = ["created", "resumed", "replacement"] as const;
export const LEASE_STATUSES = ["active", "pending_cleanup", "released", "expired", "failed", "retained"] as const;
export const CLAIM_KINDS = ["reattach_remote_runner", "staged_attachment", "resume_dead_runner", "bootstrap_incomplete"] as const;
export const RUNNER_LIFECYCLES = [
  "connecting",
  "ready",
  "backpressure",
  "recoverable_failure",
  "unrecoverable",
  "suspended",
  "stopped",
  "revoked",
] as const;
export const RUNNER_PROCESS_STATES = ["stopped", "absent", "running", "unknown"] as const;
export const PROVIDER_FAILURE_KINDS = ["requires_action", "transient", "rate_limit", "quota", "model", "unknown"] as const;

// ---- lease_binding ------------------------------------------------------------------

export const leaseBindingEvidenceSchema = z.object({
  kind: z.literal("lease_binding"),
  path: z.enum(["staged_attachment", "remote_reattach"]),
  claim: z.object({
    runId: idSchema,
    /** Null: the run's checkpoint named no lease or directory, so the claim names nothing (refused). */
    remote: z.object({ providerLeaseId: idSchema.nullable(), remoteCwd: idSchema.nullable() }),
  }),
  target: z.object({
    runId: idSchema,
    providerLeaseId: idSchema,
    /** The directory the target sandbox's runner reports it works in (its state's `workDir`); null: it reports none (refused). */
    remoteCwd: idSchema.nullable(),
    acquisitionOutcome: z.enum(ACQUISITION_OUTCOMES),
  }),
  /** The later staged checks; each one present is one more required check. */
  staged: z
    .object({
      headerReadable: z.boolean().optional(),
      sourceRunMatches: z.boolean().optional(),
      templateDigestMatches: z.boolean().optional(),
      runnerIdentityMatches: z.boolean().optional(),
      /**
       * The runner program on the sandbox against the released programs (runner/releases.json):
       * its digest as its state says, the protocol the manifest gives that digest (null: not a
       * released program), and the protocols this controller drives. Given, it stands for
       * `templateDigestMatches` (docs/rules.md §2.1).
       */
      runnerProgram: z
        .object({
          digest: z.string().nullable(),
          protocol: z.number().int().positive().nullable(),
          speaks: z.object({ min: z.number().int().positive(), max: z.number().int().positive() }),
        })
        .optional(),
    })
    .nullish(),
});
export type LeaseBindingEvidence = z.infer<typeof leaseBindingEvidenceSchema>;

// ---- bootstrap_restart --------------------------------------------------------------

export const runnerStateSchema = z.object({
  runId: idSchema,
  runnerInstanceId: idSchema,
  sessionId: idSchema,
  lifecycle: z.enum(RUNNER_LIFECYCLES),
  lastConnectionProtocolVersion: z.union([z.string(), z.number()]).nullable(),
  lastControllerCommandSeq: z.number().int().nonnegative(),
  reconnectCount: z.number().int().nonnegative(),
  outbox: z.array(z.unknown()),
  processedCommands: z.array(z.unknown()),
  /** Any shape; only null or false count as "none" (missing is not proof of none). */
  pendingTerminalDelivery: z.unknown(),
});
export type RunnerState = z.infer<typeof runnerStateSchema>;

export const bootstrapRestartEvidenceSchema = z.object({
  kind: z.literal("bootstrap_restart"),
  acquisitionOutcome: z.enum(ACQUISITION_OUTCOMES),
  run: z.object({ id: idSchema, runnerInstanceId: idSchema, sessionId: idSchema }),
  claim: z.object({ kind: z.enum(CLAIM_KINDS), runId: idSchema, runnerInstanceId: idSchema, sessionId: idSchema }),
  localProof: z.object({ recordedAt: isoTimeSchema }).nullish(),
  runnerState: runnerStateSchema.nullish(),
  providerStatePresent: z.boolean(),
  failoverBackup: z.boolean(),
  archivedRotationSnapshot: z.boolean(),
  runnerProcess: z.enum(RUNNER_PROCESS_STATES),
});
export type BootstrapRestartEvidence = z.infer<typeof bootstrapRestartEvidenceSchema>;

// ---- startup_failure ----------------------------------------------------------------

export const DEFAULT_MAX_PROVIDER_ATTEMPTS = 3;

export const startupFailureEvidenceSchema = z.object({
  kind: z.literal("startup_failure"),
  target: z.enum(["local", "remote"]),
  // The classification is defined for session.open only (docs/rules.md §2.3).
  phase: z.literal("session.open"),
  definite: z.boolean(),
  providerFailure: z
    .object({
      kind: z.enum(PROVIDER_FAILURE_KINDS),
      category: z.string().nullish(),
      message: z.string().nullish(),
    })
    .nullish(),
  attempt: z.number().int().positive(),
  maxAttempts: z.number().int().positive().default(DEFAULT_MAX_PROVIDER_ATTEMPTS),
  /** The runner could not bind its ingress port (something else in the sandbox holds it). */
  bindConflict: z.boolean().default(false),
  /**
   * The runner could not be run at all: the sandbox has no `node` on its PATH (the shell's
   * exit 127), with the snapshot the provider says the sandbox was made from.
   */
  runnerMissing: z.object({ program: z.literal("node"), snapshot: z.string().nullable() }).nullish(),
});
export type StartupFailureEvidence = z.infer<typeof startupFailureEvidenceSchema>;

// ---- process_exit -------------------------------------------------------------------

export const processExitEvidenceSchema = z.object({
  kind: z.literal("process_exit"),
  record: partialIdentitySchema.nullish(),
  observer: identitySchema,
  probe: probeSchema.nullish(),
});
export type ProcessExitEvidence = z.infer<typeof processExitEvidenceSchema>;

// ---- creation_intent ----------------------------------------------------------------

const sandboxLabelsSchema = z.object({
  instance: z.string().nullish(),
  company: z.string().nullish(),
  operation: z.string().nullish(),
});

export const inspectionSchema = z.discriminatedUnion("found", [
  z.object({ found: z.literal(true), sandbox: z.object({ name: z.string(), labels: sandboxLabelsSchema }) }),
  z.object({ found: z.literal(false) }),
]);
export type Inspection = z.infer<typeof inspectionSchema>;

export const creationIntentEvidenceSchema = z.object({
  kind: z.literal("creation_intent"),
  now: isoTimeSchema,
  intent: z.object({
    id: idSchema,
    instanceId: idSchema,
    companyId: idSchema,
    // Recovery acts on pending intents only; the other statuses are settled.
    status: z.literal("pending"),
    creationName: idSchema,
    createdAt: isoTimeSchema,
    nextAttemptAt: isoTimeSchema,
    settleDeadline: isoTimeSchema,
    creator: partialIdentitySchema.nullish(),
  }),
  observer: identitySchema,
  creatorProbe: probeSchema.nullish(),
  committedLease: z.boolean(),
  inspection: inspectionSchema.nullish(),
});
export type CreationIntentEvidence = z.infer<typeof creationIntentEvidenceSchema>;

// ---- teardown_fence -----------------------------------------------------------------

export const teardownFenceEvidenceSchema = z.object({
  kind: z.literal("teardown_fence"),
  now: isoTimeSchema,
  lease: z.object({
    status: z.enum(LEASE_STATUSES),
    // Required (may be null): a missing fence must not read as "no fence, release".
    claimAttemptId: idSchema.nullable(),
    fencedUntil: isoTimeSchema.nullable(),
  }),
  claimRecord: z.object({ attemptId: idSchema, claimer: partialIdentitySchema.nullish() }).nullish(),
  observer: identitySchema,
  claimerProbe: probeSchema.nullish(),
  /**
   * The claimer's controller as its heartbeat row shows it, on the database's clock: what is
   * known of a claimer on another host, whose process no probe here can judge (§2.6, §2.10).
   */
  claimerHeartbeat: z
    .object({
      bootId: idSchema,
      stoppedAt: isoTimeSchema.nullable(),
      lastSeenAt: isoTimeSchema,
      silenceWindowMs: z.number().int().positive(),
    })
    .nullish(),
});
export type TeardownFenceEvidence = z.infer<typeof teardownFenceEvidenceSchema>;

// ---- sandbox_ownership --------------------------------------------------------------

/** One record of Runwarden's that may name a sandbox (§2.9): a creation intent or a lease. */
export const ownershipRecordSchema = z.discriminatedUnion("type", [
  z.object({
    type: z.literal("intent"),
    id: idSchema,
    instanceId: idSchema,
    companyId: idSchema,
    creationName: idSchema,
  }),
  z.object({
    type: z.literal("lease"),
    id: idSchema,
    instanceId: idSchema,
    companyId: idSchema,
    /** The provider's sandbox id, once the lease learnt it. */
    providerLeaseId: idSchema.nullish(),
    sandboxName: idSchema.nullish(),
    /** The creation intent (operation) it was committed from, when there was one. */
    operationId: idSchema.nullish(),
  }),
]);
export type OwnershipRecord = z.infer<typeof ownershipRecordSchema>;

export const sandboxOwnershipEvidenceSchema = z.object({
  kind: z.literal("sandbox_ownership"),
  /** The instance asking: only its own records can prove ownership. */
  instanceId: idSchema,
  sandbox: z.object({ id: idSchema, name: idSchema, labels: sandboxLabelsSchema }),
  /** Records found by the sandbox's id or name; those of another instance prove nothing. */
  records: z.array(ownershipRecordSchema),
  /**
   * The record a destroy would act through (a teardown's lease): when given, it must be
   * one of the records naming this sandbox — a sandbox found by a reused name is not its.
   */
  actingRecord: z.object({ type: z.enum(["intent", "lease"]), id: idSchema }).nullish(),
});
export type SandboxOwnershipEvidence = z.infer<typeof sandboxOwnershipEvidenceSchema>;

// ---- turn_result --------------------------------------------------------------------

export const turnResultEvidenceSchema = z.object({
  kind: z.literal("turn_result"),
  /** The turn the controller asked for (1-based). */
  expectedSeq: z.number().int().positive(),
  /**
   * The runner's durable record of the agent command it ran for that turn; null when the
   * runner gave none within the controller's deadline (the turn's budget plus a margin).
   */
  record: z
    .object({
      seq: z.number().int().nonnegative(),
      exitCode: z.number().int().nullable(),
      /** The runner killed the agent's process group at the turn's budget (absent: a runner that keeps no budget). */
      timedOut: z.boolean().optional(),
      /** How long the agent command ran (ms), from the record. */
      durationMs: z.number().nonnegative().nullish(),
    })
    .nullable(),
  /** The turn's budget (ms) the runner was given, when it was given one (docs/rules.md "Turns"). */
  budgetMs: z.number().int().positive().optional(),
  /** How long the controller waited for a record that never came, and its bound (with `record: null`). */
  deadline: z.object({ deadlineMs: z.number().int().positive(), waitedMs: z.number().nonnegative() }).optional(),
});
export type TurnResultEvidence = z.infer<typeof turnResultEvidenceSchema>;

// ---- recovery_attempt ---------------------------------------------------------------

export const recoveryAttemptEvidenceSchema = z.object({
  kind: z.literal("recovery_attempt"),
  now: isoTimeSchema,
  /** Failed recovery attempts on this run so far, counting the one that just failed. */
  attempts: z.number().int().positive(),
  maxAttempts: z.number().int().positive(),
  /** The first back-off; each further attempt doubles it, capped (§2.8). */
  backoffBaseMs: z.number().int().nonnegative(),
  lastError: z.string(),
  /** The errors of the earlier attempts, oldest first (kept with the proof). */
  errors: z.array(z.string()).default([]),
  /**
   * What the error was, as the provider client classified it (§2.8): absent or `other` when
   * it was not a provider call's failure. `kind` is the client's (`unreachable`, `timeout`,
   * `http`, `garbage`, …), `status` the HTTP status when there was one.
   */
  failure: z
    .object({
      kind: z.enum(["unreachable", "timeout", "aborted", "garbage", "http", "refused", "other"]),
      status: z.number().int().nullable(),
      code: z.string().nullable().default(null),
      /** The provider's own wait (Retry-After, X-RateLimit-Reset), in ms, when it sent one. */
      retryAfterMs: z.number().int().nonnegative().nullable().default(null),
      /**
       * Where the call went: the provider's sandbox API, or one sandbox's toolbox behind its
       * proxy. Absent in bundles older than the distinction: judged as before.
       */
      scope: z.enum(["api", "toolbox"]).optional(),
    })
    .optional(),
  /**
   * The run's 429 waits since it last went on (§2.8): `waits` before this one, `since` the
   * first one's time, and the bounds. A 429 waits uncounted only below both; absent (older
   * bundles): every 429 waits, as before.
   */
  rateLimit: z
    .object({
      waits: z.number().int().nonnegative(),
      since: isoTimeSchema.nullable(),
      maxWaits: z.number().int().nonnegative(),
      maxWaitMs: z.number().int().nonnegative(),
    })
    .optional(),
  /**
   * The controller's breaker for this provider, read after the error (§2.8): `reachable`
   * false when a probe after the error found the provider unavailable too, true when one
   * answered; `nextProbeAt` when it will be probed again (null when closed).
   */
  provider: z
    .object({
      reachable: z.boolean(),
      unavailableSince: isoTimeSchema.nullable(),
      lastError: z.string().nullable(),
      nextProbeAt: isoTimeSchema.nullable(),
    })
    .optional(),
});
export type RecoveryAttemptEvidence = z.infer<typeof recoveryAttemptEvidenceSchema>;

// ---- recovery_route -----------------------------------------------------------------

export const RUN_PHASES = ["acquiring", "bootstrapping", "session_open", "finishing", "done"] as const;

export const recoveryRouteEvidenceSchema = z.object({
  kind: z.literal("recovery_route"),
  /** The run's recorded phase; null (never started) reads as acquiring. */
  phase: z.enum(RUN_PHASES).nullable(),
  sandboxMode: z.enum(["warm", "per_turn"]),
  turnsDone: z.number().int().nonnegative(),
  /** The run holds an active lease with a provider sandbox id. */
  sandboxBound: z.boolean(),
  /**
   * What the sandbox's runner says, read only when the route asked for it (`read_runner`);
   * null or missing: not read yet.
   */
  runner: z
    .object({
      /** The runner's durable state, or null when the sandbox has none. */
      state: z
        .object({
          /** Run, runner instance and session of the state are this run's own. */
          ownedByRun: z.boolean(),
          lastConnectionProtocolVersion: z.union([z.string(), z.number()]).nullable(),
          lifecycle: z.enum(RUNNER_LIFECYCLES),
          /** The seq of the turn the runner was running when it wrote its state; null: none; missing: not known (never a given-back sandbox). */
          turnInFlight: z.number().int().positive().nullish(),
          /** The highest seq the runner processed (recorded durably); null: none; missing: not known (never a given-back sandbox). */
          lastProcessedSeq: z.number().int().positive().nullish(),
        })
        .nullable(),
      process: z.enum(RUNNER_PROCESS_STATES),
    })
    .nullish(),
});
export type RecoveryRouteEvidence = z.infer<typeof recoveryRouteEvidenceSchema>;

// ---- stopped_sandbox ----------------------------------------------------------------

export const stoppedSandboxEvidenceSchema = z.object({
  kind: z.literal("stopped_sandbox"),
  /** The provider's state of the lease's sandbox; null when the provider says it does not exist. */
  sandboxState: z.string().nullable(),
  desiredState: z.string().nullable(),
  /** Start attempts already made for this lease. */
  startAttempts: z.number().int().nonnegative(),
  maxStartAttempts: z.number().int().nonnegative(),
});
export type StoppedSandboxEvidence = z.infer<typeof stoppedSandboxEvidenceSchema>;

// ---- runner_resume -------------------------------------------------------------------

export const runnerResumeEvidenceSchema = z.object({
  kind: z.literal("runner_resume"),
  /** The run's own ids: what the runner state must name. */
  run: z.object({ runId: idSchema, runnerInstanceId: z.string().nullable(), sessionId: z.string().nullable() }),
  /** runner-state.json on the admitted lease's sandbox; null when there is none. */
  state: z
    .object({
      // Two empty ids must never count as the same run.
      runId: idSchema,
      runnerInstanceId: z.string(),
      sessionId: z.string(),
      lifecycle: z.enum(RUNNER_LIFECYCLES),
      lastConnectionProtocolVersion: z.union([z.string(), z.number()]).nullable(),
      /** A turn the runner had started and not recorded as processed. */
      turnInFlight: z.number().int().nullable(),
    })
    .nullable(),
  /** The runner process the state names, as `runnerd ctl process` sees it in the sandbox. */
  process: z.enum(RUNNER_PROCESS_STATES),
});
export type RunnerResumeEvidence = z.infer<typeof runnerResumeEvidenceSchema>;

// ---- the bundle ---------------------------------------------------------------------

export const evidenceSchema = z.discriminatedUnion("kind", [
  leaseBindingEvidenceSchema,
  bootstrapRestartEvidenceSchema,
  startupFailureEvidenceSchema,
  processExitEvidenceSchema,
  creationIntentEvidenceSchema,
  teardownFenceEvidenceSchema,
  sandboxOwnershipEvidenceSchema,
  turnResultEvidenceSchema,
  recoveryAttemptEvidenceSchema,
  recoveryRouteEvidenceSchema,
  stoppedSandboxEvidenceSchema,
  runnerResumeEvidenceSchema,
]);
export type Evidence = z.infer<typeof evidenceSchema>;
/** What a caller may send (before defaults such as `maxAttempts` are applied). */
export type EvidenceInput = z.input<typeof evidenceSchema>;
