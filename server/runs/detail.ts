import { z } from "zod";
import { RunStatus, type Db, type Proof } from "../db/client";
import { admitCancel, admitRetry, catalogueRowSchema, describeFailure, EXECUTING_RUN_STATUSES, failureDescriptionSchema } from "../engine";
import { readHealth } from "../health";
import { AppError } from "../errors";
import { runRowSchema } from "./queries";
import { otherLiveRun } from "./retry";
import { inScope, type CompanyScope } from "../shared/roles";
import { uuidSchema } from "../lib/ids";

/**
 * Everything the run page shows, read in one place. Proofs and their checks are returned
 * exactly as the engine recorded them: nothing here re-evaluates a decision.
 */

export const runIdInput = z.object({ id: uuidSchema });

/** A check as stored: `expected` and `actual` stay whatever the engine wrote (or absent). */
export const recordedCheckSchema = z.looseObject({ name: z.string(), ok: z.boolean(), expected: z.unknown().optional(), actual: z.unknown().optional() });
export type RecordedCheck = z.infer<typeof recordedCheckSchema>;


const runLinkSchema = z.object({ id: z.string(), status: z.enum(RunStatus), failureCode: z.string().nullable(), createdAt: z.date() });

export const proofViewSchema = z.object({
  id: z.string(),
  kind: z.string(),
  verdict: z.string(),
  code: z.string().nullable(),
  reason: z.string().nullable(),
  /** Null when the stored checks are not a list of checks; `checksRaw` then has them verbatim. */
  checks: z.array(recordedCheckSchema).nullable(),
  checksRaw: z.unknown(),
  failure: failureDescriptionSchema.nullable(),
  evaluatedBy: z.string(),
  evaluatedAt: z.date(),
  claimId: z.string().nullable(),
  leaseId: z.string().nullable(),
  intentId: z.string().nullable(),
  sandboxId: z.string().nullable(),
});
export type ProofView = z.infer<typeof proofViewSchema>;

export const runDetailOutput = z.object({
  // The list's row, minus what only the list shows, plus what only the detail needs.
  run: runRowSchema.omit({ failureMessage: true, canRetry: true, previousRunId: true }).extend({
    instanceId: z.string(),
    failureDetail: z.string().nullable(),
    recoveryMode: z.string().nullable(),
    recoveryState: z.string().nullable(),
    retryAt: z.date().nullable(),
    phase: z.string().nullable(),
    turnsPlanned: z.number().int(),
    turnsDone: z.number().int(),
    runnerInstanceId: z.string().nullable(),
    sessionId: z.string().nullable(),
    executorBootId: z.string().nullable(),
    heartbeatAt: z.date().nullable(),
    waveId: z.string().nullable(),
    startedAt: z.date().nullable(),
    /** What each turn runs (null: the demo agent). */
    agentCommand: z.string().nullable(),
    /** This run's own turn budget in ms (null: the controller's RUNWARDEN_TURN_TIMEOUT_MS). */
    turnTimeoutMs: z.number().int().nullable(),
    /** Recovery attempts counted against the bound (§2.8), and when recovery may look again. */
    recoveryAttempts: z.number().int(),
    recoveryNotBefore: z.date().nullable(),
    /** Who cancelled the run and why (§2.11); null unless it is `cancelled`. */
    cancelledBy: z.string().nullable(),
    cancelReason: z.string().nullable(),
    /** The submitting platform's own id for the run (docs/api.md), when it gave one. */
    externalId: z.string().nullable(),
  }),
  /** Set while the run waits for its provider to come back (§2.8): since when, and the outage as the controllers see it. */
  providerWait: z
    .object({ since: z.date(), outageSince: z.date().nullable(), lastError: z.string().nullable() })
    .nullable(),
  /** Each turn's record from the runner (exit code, bounded output tail), oldest first. */
  turnLog: z.array(
    z.object({ turn: z.number().int(), at: z.date(), exitCode: z.number().int().nullable(), durationMs: z.number().nullable(), outputTail: z.string() }),
  ),
  /** The catalogue's entry for the run's code (null without a code). */
  failure: failureDescriptionSchema.nullable(),
  retry: z.object({
    /** Null when Retry is offered; otherwise why not, in plain words. */
    blocker: z.string().nullable(),
    /** The one run a Retry made, if any. */
    successorId: z.string().nullable(),
    /**
     * The run that now carries the task: the successor, or the newest run down the Retry
     * chain, read live, with its code's sentence. Null while this run was not retried.
     */
    current: runLinkSchema.extend({ failureMessage: z.string().nullable(), nextAction: z.string().nullable(), hops: z.number().int().min(1) }).nullable(),
  }),
  /** Cancel (§2.11): null when offered; otherwise why not, in plain words (the engine's admitCancel). */
  cancel: z.object({ blocker: z.string().nullable() }),
  events: z.array(z.object({ id: z.string(), type: z.string(), at: z.date(), bootId: z.string().nullable(), data: z.unknown() })),
  /** True when the timeline has more events than shown (the newest are kept). */
  eventsTruncated: z.boolean(),
  claims: z.array(
    z.object({
      id: z.string(),
      kind: z.string(),
      providerLeaseId: z.string().nullable(),
      remoteCwd: z.string().nullable(),
      runnerInstanceId: z.string().nullable(),
      sessionId: z.string().nullable(),
      controllerBootId: z.string(),
      restartKind: z.string(),
      disposition: z.string().nullable(),
      createdAt: z.date(),
      decidedAt: z.date().nullable(),
      proofIds: z.array(z.string()),
    }),
  ),
  proofs: z.array(proofViewSchema),
  leases: z.array(
    z.object({
      id: z.string(),
      provider: z.string(),
      providerLeaseId: z.string().nullable(),
      sandboxName: z.string().nullable(),
      remoteCwd: z.string().nullable(),
      turn: z.number().int().nullable(),
      acquisitionOutcome: z.string(),
      status: z.string(),
      cleanupStatus: z.string().nullable(),
      cleanupAttempts: z.number().int(),
      nextCleanupAt: z.date().nullable(),
      lastCleanupError: z.string().nullable(),
      intentId: z.string().nullable(),
      /** The current (or last) teardown claim: attempt, claimer as recorded, fence. */
      teardownClaim: z.object({ attemptId: z.string(), record: z.unknown(), fencedUntil: z.date().nullable() }).nullable(),
      terminationReceipt: z.unknown(),
      /** The idle policy the sandbox was created with, minutes (null: not recorded, e.g. a reclaim's lease). */
      idlePolicy: z.object({ autoStopMinutes: z.number().int().nullable(), autoDeleteMinutes: z.number().int().nullable() }),
      createdAt: z.date(),
      endedAt: z.date().nullable(),
    }),
  ),
  intents: z.array(z.object({ id: z.string(), status: z.string(), creationName: z.string(), attempts: z.number().int(), createdAt: z.date(), resolvedAt: z.date().nullable() })),
  runnerState: z.object({ state: z.unknown(), at: z.date().nullable() }),
  /** Oldest first: the runs this one retries, and the runs that retried it. */
  lineage: z.object({ previous: z.array(runLinkSchema), next: z.array(runLinkSchema) }),
});
export type RunDetail = z.infer<typeof runDetailOutput>;

/** Timeline rows returned at most; a run that loops shows its newest. */
const EVENT_LIMIT = 500;
/** Lineage is followed this far each way. */
const LINEAGE_LIMIT = 25;

/** The catalogue fields a verdict carried when it was recorded (docs/evidence.md "Output"). */
const storedFailure = catalogueRowSchema.extend({ code: z.string() });

/**
 * What the proof's code meant when it was recorded: the stored verdict's own fields, never
 * today's catalogue (a proof is shown exactly as recorded). A stored verdict without them
 * says so, offers nothing, and keeps its raw code for an operator.
 */
function recordedFailure(p: Proof): z.infer<typeof failureDescriptionSchema> | null {
  if (p.code === null) return null;
  const stored = storedFailure.safeParse(p.output);
  if (stored.success && stored.data.code === p.code) return { known: true, ...stored.data };
  return {
    code: p.code,
    known: false,
    outcome: "terminal_failure",
    owner: "board",
    canRetry: false,
    message: `This proof was recorded with code ${p.code} but without what the code meant then.`,
    nextAction: "Read the proof's checks; ask an operator if the run needs a decision",
  };
}

export function proofToView(p: Proof): ProofView {
  const parsed = z.array(recordedCheckSchema).safeParse(p.checks);
  return {
    id: p.id,
    kind: p.kind,
    verdict: p.verdict,
    code: p.code,
    reason: p.reason,
    checks: parsed.success ? parsed.data : null,
    checksRaw: parsed.success ? null : p.checks,
    failure: recordedFailure(p),
    evaluatedBy: p.evaluatedBy,
    evaluatedAt: p.evaluatedAt,
    claimId: p.claimId,
    leaseId: p.leaseId,
    intentId: p.intentId,
    sandboxId: p.sandboxId,
  };
}

export async function getRunDetail(db: Db, scope: CompanyScope, id: string): Promise<RunDetail> {
  const found = await db.run.findUnique({ where: { id }, include: { nextRun: { select: { id: true } } } });
  // Another company's run reads exactly like one that does not exist (no id guessing).
  const run = found && inScope(scope, found.companyId) ? found : null;
  if (!run) throw new AppError("NOT_FOUND", `run ${id} does not exist`);
  const [events, eventCount, claims, proofs, leases, intents, lineage] = await Promise.all([
    db.runEvent.findMany({ where: { runId: id }, orderBy: { id: "desc" }, take: EVENT_LIMIT }),
    db.runEvent.count({ where: { runId: id } }),
    db.recoveryClaim.findMany({ where: { runId: id }, orderBy: { createdAt: "asc" }, include: { proofs: { select: { id: true } } } }),
    db.proof.findMany({ where: { runId: id }, orderBy: [{ evaluatedAt: "asc" }, { id: "asc" }] }),
    db.environmentLease.findMany({ where: { runId: id }, orderBy: [{ createdAt: "asc" }, { id: "asc" }] }),
    db.sandboxCreationIntent.findMany({ where: { runId: id }, orderBy: [{ createdAt: "asc" }, { id: "asc" }] }),
    readLineage(db, run.previousRunId, run.nextRun?.id ?? null),
  ]);
  // The same engine admission Retry itself applies (§2.7), so the page never offers what Retry refuses.
  const first = admitRetry({ run, successorId: run.nextRun?.id ?? null, otherLiveRun: null });
  const admission = first.verdict === "admitted" ? admitRetry({ run, successorId: null, otherLiveRun: await otherLiveRun(db, run) }) : first;
  const blocker = admission.refusal;
  return {
    run: {
      id: run.id,
      instanceId: run.instanceId,
      companyId: run.companyId,
      taskId: run.taskId,
      agent: run.agent,
      provider: run.provider,
      target: run.target,
      sandboxMode: run.sandboxMode,
      status: run.status,
      outcome: run.outcome,
      failureCode: run.failureCode,
      failureDetail: run.failureDetail,
      owner: run.owner,
      providerAttempts: run.providerAttempts,
      maxProviderAttempts: run.maxProviderAttempts,
      recoveryMode: run.recoveryMode,
      recoveryState: run.recoveryState,
      retryAt: run.retryAt,
      phase: run.phase,
      restarts: run.restarts,
      turnsPlanned: run.turnsPlanned,
      turnsDone: run.turnsDone,
      runnerInstanceId: run.runnerInstanceId,
      sessionId: run.sessionId,
      executorBootId: run.executorBootId,
      heartbeatAt: run.heartbeatAt,
      waveId: run.waveId,
      createdAt: run.createdAt,
      startedAt: run.startedAt,
      finishedAt: run.finishedAt,
      agentCommand: run.agentCommand,
      turnTimeoutMs: run.turnTimeoutMs,
      recoveryAttempts: run.recoveryAttempts,
      recoveryNotBefore: run.recoveryNotBefore,
      cancelledBy: run.cancelledBy,
      cancelReason: run.cancelReason,
      externalId: run.externalId,
    },
    providerWait: await providerWaitOf(db, scope, run),
    turnLog: turnLogOf(await db.runEvent.findMany({ where: { runId: id, type: { in: ["turn_done", "turn_failed"] } }, orderBy: { id: "asc" } })),
    failure: describeFailure(run.failureCode),
    retry: { blocker, successorId: run.nextRun?.id ?? null, current: currentRun(lineage.next) },
    cancel: { blocker: admitCancel({ run }).refusal },
    events: events.reverse().map((e) => ({ id: e.id.toString(), type: e.type, at: e.at, bootId: e.bootId, data: e.data })),
    eventsTruncated: eventCount > events.length,
    claims: claims.map((c) => ({
      id: c.id,
      kind: c.kind,
      providerLeaseId: c.providerLeaseId,
      remoteCwd: c.remoteCwd,
      runnerInstanceId: c.runnerInstanceId,
      sessionId: c.sessionId,
      controllerBootId: c.controllerBootId,
      restartKind: c.restartKind,
      disposition: c.disposition,
      createdAt: c.createdAt,
      decidedAt: c.decidedAt,
      proofIds: c.proofs.map((p) => p.id),
    })),
    proofs: proofs.map(proofToView),
    leases: leases.map((l) => ({
      id: l.id,
      provider: l.provider,
      providerLeaseId: l.providerLeaseId,
      sandboxName: l.sandboxName,
      remoteCwd: l.remoteCwd,
      turn: l.turn,
      acquisitionOutcome: l.acquisitionOutcome,
      status: l.status,
      cleanupStatus: l.cleanupStatus,
      cleanupAttempts: l.cleanupAttempts,
      nextCleanupAt: l.nextCleanupAt,
      lastCleanupError: l.lastCleanupError,
      intentId: l.intentId,
      teardownClaim: l.claimAttemptId ? { attemptId: l.claimAttemptId, record: l.claimRecord, fencedUntil: l.fencedUntil } : null,
      terminationReceipt: l.terminationReceipt,
      idlePolicy: { autoStopMinutes: l.autoStopMinutes, autoDeleteMinutes: l.autoDeleteMinutes },
      createdAt: l.createdAt,
      endedAt: l.endedAt,
    })),
    intents: intents.map((i) => ({ id: i.id, status: i.status, creationName: i.creationName, attempts: i.attempts, createdAt: i.createdAt, resolvedAt: i.resolvedAt })),
    runnerState: { state: run.lastRunnerState, at: run.lastRunnerStateAt },
    lineage,
  };
}

/** The newest run of the Retry chain after this one, as the old run's page reports it. */
function currentRun(next: Array<z.infer<typeof runLinkSchema>>) {
  const last = next.at(-1);
  if (!last) return null;
  const entry = describeFailure(last.failureCode);
  return { ...last, failureMessage: entry?.message ?? null, nextAction: entry?.nextAction ?? null, hops: next.length };
}

async function readLineage(db: Db, previousId: string | null, nextId: string | null) {
  const select = { id: true, status: true, failureCode: true, createdAt: true, previousRunId: true } as const;
  const previous: Array<z.infer<typeof runLinkSchema>> = [];
  for (let id = previousId; id && previous.length < LINEAGE_LIMIT; ) {
    const r = await db.run.findUnique({ where: { id }, select });
    if (!r) break;
    previous.unshift({ id: r.id, status: r.status, failureCode: r.failureCode, createdAt: r.createdAt });
    id = r.previousRunId;
  }
  const next: Array<z.infer<typeof runLinkSchema>> = [];
  for (let id = nextId; id && next.length < LINEAGE_LIMIT; ) {
    const r = await db.run.findUnique({ where: { id }, select: { ...select, nextRun: { select: { id: true } } } });
    if (!r) break;
    next.push({ id: r.id, status: r.status, failureCode: r.failureCode, createdAt: r.createdAt });
    id = r.nextRun?.id ?? null;
  }
  return { previous, next };
}

export const runEvidenceOutput = z.array(
  z.object({ proofId: z.string(), kind: z.string(), verdict: z.string(), evaluatedAt: z.date(), evidence: z.unknown() }),
);

/**
 * The evidence bundles behind the run's proofs, oldest first, exactly as stored: each one
 * is what the engine was given, so `runwarden decide` accepts it and gives the same verdict.
 */
export async function runEvidence(db: Db, scope: CompanyScope, id: string): Promise<z.infer<typeof runEvidenceOutput>> {
  const run = await db.run.findUnique({ where: { id }, select: { id: true, companyId: true } });
  if (!run || !inScope(scope, run.companyId)) throw new AppError("NOT_FOUND", `run ${id} does not exist`);
  const proofs = await db.proof.findMany({
    where: { runId: id },
    orderBy: [{ evaluatedAt: "asc" }, { id: "asc" }],
    select: { id: true, kind: true, verdict: true, evaluatedAt: true, evidence: true },
  });
  return proofs.map((p) => ({ proofId: p.id, kind: p.kind, verdict: p.verdict, evaluatedAt: p.evaluatedAt, evidence: p.evidence }));
}

/** The turn log from the turn events (the runner's record as the controller stored it). */
function turnLogOf(events: Array<{ at: Date; data: unknown }>): RunDetail["turnLog"] {
  const out: RunDetail["turnLog"] = [];
  for (const e of events) {
    const d = (e.data ?? {}) as { turn?: unknown; exitCode?: unknown; durationMs?: unknown; outputTail?: unknown };
    if (typeof d.turn !== "number") continue;
    out.push({
      turn: d.turn,
      at: e.at,
      exitCode: typeof d.exitCode === "number" ? d.exitCode : null,
      durationMs: typeof d.durationMs === "number" ? d.durationMs : null,
      outputTail: typeof d.outputTail === "string" ? d.outputTail : "",
    });
  }
  return out;
}

async function providerWaitOf(db: Db, scope: CompanyScope, run: { instanceId: string; providerWaitSince: Date | null; status: string }): Promise<RunDetail["providerWait"]> {
  if (!run.providerWaitSince || !(EXECUTING_RUN_STATUSES as readonly string[]).includes(run.status)) return null;
  const outage = (await readHealth(db, scope, run.instanceId)).providerOutage;
  return { since: run.providerWaitSince, outageSince: outage?.since ?? null, lastError: outage?.lastError ?? null };
}
