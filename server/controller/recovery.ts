import { Prisma, type ControllerProcess, type Db, type EnvironmentLease, type RestartKind, type Run } from "../db/client";
import {
  assertNever,
  EXECUTING_RUN_STATUSES,
  evaluateBootstrapRestart,
  isSilent,
  judgeRecoveryAttempt,
  restingCode,
  routeRecovery,
  RUN_PHASES,
  runnerStateEvidence,
  type BootstrapRestartEvidence,
  type LeaseBindingEvidence,
  type RecoveryAttemptEvidence,
  type RecoveryRouteEvidence,
  type RecoveryRouteResult,
  decideRunnerResume,
  type RunnerResumeEvidence,
  type Verdict,
} from "../engine";
import { ProviderError } from "../providers/errors";
import { processedCommandSchema, PROVIDER_STATE_PATH, RUNNER_ROOT, readRunnerState, runnerProgramDigest, type RunnerState } from "../providers/runner";
import { resumeLease } from "./acquire";
import type { ControllerContext } from "./context";
import { activeLease } from "./execute";
import { readRunnerRoot } from "./home";
import { judgeExit } from "./observe";
import { assertCurrent, fenced, whileCurrent, type RunFence } from "./fence";
import { finishRunFailed } from "./outcome";
import { appendEvent, appendEvents, json, recordProof, type ProofLinks } from "./records";
import { bringSandboxUp } from "./stopped-sandbox";
import { outageEvidence } from "./outage";
import { markRunLeases, takeDownLeases } from "./teardown";
import { leaseBinding } from "./rules";
import { databaseNow } from "../db/clock";

const ACTIVE = EXECUTING_RUN_STATUSES;

export const FAILOVER_BACKUP_PATH = `${RUNNER_ROOT}/failover-backup.json`;
export const ROTATION_SNAPSHOT_PATH = `${RUNNER_ROOT}/rotation-snapshot.archived.json`;

export interface ExecutorStatus {
  gone: boolean;
  restartKind: RestartKind;
  reason: string;
  proof?: { evidence: unknown; verdict: ReturnType<typeof judgeExit>["verdict"] };
}

/**
 * Whether the controller that was executing a run is gone: it drained (graceful), the
 * engine proves its process exited, or it stopped heartbeating (another host cannot be
 * probed, so silence is the only evidence there). A live executor keeps its runs.
 */
export function executorStatus(ctx: ControllerContext, executor: ControllerProcess | null, now: Date): ExecutorStatus {
  if (!executor) return { gone: true, restartKind: "hot", reason: "no_executor" };
  if (executor.stoppedAt) {
    return { gone: true, restartKind: executor.stopReason === "drain" ? "graceful" : "hard", reason: `stopped:${executor.stopReason ?? "unknown"}` };
  }
  const record = {
    bootId: executor.bootId,
    pid: executor.pid,
    startedAt: executor.startedAt.toISOString(),
    startTicks: executor.startTicks === null ? null : Number(executor.startTicks),
    pidSpace: executor.pidSpace,
  };
  const judged = judgeExit(ctx, record);
  if (judged.verdict.verdict === "exited") {
    return { gone: true, restartKind: "hard", reason: `exited:${judged.verdict.reason}`, proof: judged };
  }
  if (judged.verdict.verdict === "alive") return { gone: false, restartKind: "hard", reason: `alive:${judged.verdict.reason}` };
  if (isSilent(executor.lastSeenAt, now, ctx.config.executorTimeoutMs)) {
    return { gone: true, restartKind: "hard", reason: `silent_for_${Math.round((now.getTime() - executor.lastSeenAt.getTime()) / 1000)}s` };
  }
  return { gone: false, restartKind: "hard", reason: `unknown:${judged.verdict.reason}` };
}

/**
 * One page of this instance's executing runs that another executor holds (or none), in id
 * order. Reads the partial index `runs_executing_by_instance` (docs/decisions/0003-cost-at-scale.md).
 */
export async function executingRunsPage(db: Db, p: { instanceId: string; bootId: string; now: Date; cursor: string | null; take: number }): Promise<Run[]> {
  // Statuses as literals: only then can PostgreSQL prove the partial index's predicate (Prisma
  // sends enum values through a cast it cannot fold at planning time).
  const executing = Prisma.raw(ACTIVE.map((s) => `'${s}'`).join(", "));
  const ids = await db.$queryRaw<{ id: string }[]>`
    SELECT id FROM runs
    WHERE instance_id = ${p.instanceId} AND status IN (${executing})
      AND (executor_boot_id IS NULL OR executor_boot_id <> ${p.bootId})
      -- A run whose last recovery attempt failed waits out its back-off (§2.8).
      AND (recovery_not_before IS NULL OR recovery_not_before <= ${p.now})
      ${p.cursor ? Prisma.sql`AND id > ${p.cursor}::uuid` : Prisma.empty}
    ORDER BY id LIMIT ${p.take}`;
  if (ids.length === 0) return [];
  return db.run.findMany({ where: { id: { in: ids.map((r) => r.id) } }, orderBy: { id: "asc" } });
}

/**
 * Interrupted runs of this instance whose executor is gone, claimed for this controller.
 * Pages through active runs by a stable id cursor (§2.8): no number of runs of live
 * executors can hide an interrupted one behind the first page.
 */
export async function claimInterruptedRuns(ctx: ControllerContext, limit: number): Promise<Array<{ run: Run; status: ExecutorStatus }>> {
  // The database's clock, as heartbeats are written: silence is never judged across two hosts' clocks.
  const now = await databaseNow(ctx.db);
  const executors = new Map<string, ControllerProcess | null>();
  const claimed: Array<{ run: Run; status: ExecutorStatus }> = [];
  let cursor: string | null = null;
  while (claimed.length < limit) {
    const page = await executingRunsPage(ctx.db, { instanceId: ctx.config.instanceId, bootId: ctx.identity.bootId, now, cursor, take: ctx.config.pageSize });
    if (page.length === 0) break;
    cursor = page[page.length - 1]!.id;
    const unknown = [...new Set(page.map((r) => r.executorBootId).filter((b): b is string => !!b && !executors.has(b)))];
    if (unknown.length) {
      const found = await ctx.db.controllerProcess.findMany({ where: { bootId: { in: unknown } } });
      for (const b of unknown) executors.set(b, found.find((p) => p.bootId === b) ?? null);
    }
    for (const run of page) {
      if (claimed.length >= limit) break;
      const executor = run.executorBootId ? (executors.get(run.executorBootId) ?? null) : null;
      const status = executorStatus(ctx, executor, now);
      if (!status.gone) continue;
      const taken = await ctx.db.$transaction(async (tx) => {
        // A run row another transaction holds (a controller stalled inside one keeps it until
        // PostgreSQL ends its session) is left for a later tick: waiting on it here held up
        // every other takeover behind it, a SIGKILLed host's runs too.
        const free = await tx.$queryRaw<{ id: string }[]>`SELECT id FROM runs WHERE id = ${run.id}::uuid FOR UPDATE SKIP LOCKED`;
        if (free.length === 0) return undefined;
        const [row] = await tx.run.updateManyAndReturn({
          where: { id: run.id, executorBootId: run.executorBootId, executorEpoch: run.executorEpoch, status: { in: [...ACTIVE] } },
          // A takeover moves the executor epoch on (§2.10): the old executor's writes now match nothing.
          data: { executorBootId: ctx.identity.bootId, restarts: { increment: 1 }, heartbeatAt: now, executorEpoch: { increment: 1 } },
        });
        return row;
      });
      // The run as the claim left it, not as the page read it: the old executor's last write
      // (a checkpoint, a phase) may have landed in between, at the same epoch (docs/rules.md §2.10).
      if (taken) claimed.push({ run: taken, status });
    }
  }
  return claimed;
}

/** Why a run this controller executes but does not track is recovered (`recovery_started.executorWas`). */
const UNTRACKED: ExecutorStatus = { gone: true, restartKind: "hot", reason: "untracked" };

/**
 * Runs that name this controller as executor but that it does not track, claimed again for
 * it. A queued claim whose UPDATE committed while its reply was lost (a failover, a reset
 * connection) leaves such a run: `executingRunsPage` skips this controller's own runs and
 * other controllers see it heartbeat, so without this no one would ever take it up. Each is
 * claimed at epoch + 1 by a compare-and-set on the epoch read, as `claimInterruptedRuns`
 * does, with a `run_adopted` event in the claim's transaction (why the epoch moved), and
 * recovered as a hot restart. `tracked` is the controller's live task map: a run it holds
 * before the read or after it is left alone, so a run between claim and track is never taken.
 */
export async function claimUntrackedRuns(ctx: ControllerContext, tracked: ReadonlyMap<string, unknown>, limit: number): Promise<Array<{ run: Run; status: ExecutorStatus }>> {
  if (limit <= 0) return [];
  const before = new Set(tracked.keys());
  const boot = ctx.identity.bootId;
  const now = new Date();
  const executing = Prisma.raw(ACTIVE.map((s) => `'${s}'`).join(", "));
  // Only this controller's own runs: as many as it claimed, so no page cursor is needed.
  const own = await ctx.db.$queryRaw<{ id: string }[]>`
    SELECT id FROM runs
    WHERE instance_id = ${ctx.config.instanceId} AND status IN (${executing}) AND executor_boot_id = ${boot}
      AND (recovery_not_before IS NULL OR recovery_not_before <= ${now})
    ORDER BY id`;
  const ids = own.map((r) => r.id).filter((id) => !before.has(id) && !tracked.has(id));
  if (ids.length === 0) return [];
  const runs = await ctx.db.run.findMany({ where: { id: { in: ids }, executorBootId: boot }, orderBy: { id: "asc" } });
  const claimed: Array<{ run: Run; status: ExecutorStatus }> = [];
  for (const run of runs) {
    if (claimed.length >= limit) break;
    if (tracked.has(run.id)) continue;
    const adopted = await ctx.db.$transaction(async (tx) => {
      const [taken] = await tx.run.updateManyAndReturn({
        where: { id: run.id, executorBootId: boot, executorEpoch: run.executorEpoch, status: { in: [...ACTIVE] } },
        data: { restarts: { increment: 1 }, heartbeatAt: now, executorEpoch: { increment: 1 } },
      });
      if (taken) {
        await appendEvent(tx, run.id, "run_adopted", boot, { why: "executed by this controller but not tracked", epochWas: run.executorEpoch, epoch: taken.executorEpoch, status: taken.status, phase: taken.phase });
      }
      return taken ?? null;
    });
    if (adopted) claimed.push({ run: adopted, status: { ...UNTRACKED } });
  }
  return claimed;
}

/**
 * Decides, with proof, how an interrupted run goes on (docs/rules.md §2.1, §2.2): the engine's
 * `routeRecovery` chooses the action (stored as a `recovery_route` proof), this shell carries
 * it out. Returns true when the run may continue (the caller executes it from its phase),
 * false when it was ended. An error while gathering evidence throws: the controller counts
 * it as a failed recovery attempt (§2.8, `countFailedAttempt`).
 */
export async function recoverRun(ctx: ControllerContext, run: Run, status: ExecutorStatus): Promise<boolean> {
  const boot = ctx.identity.bootId;
  if (status.proof) {
    await recordRunProof(ctx, run, status.proof.verdict, status.proof.evidence);
  }
  await appendEvent(ctx.db, run.id, "recovery_started", boot, { restartKind: status.restartKind, executorWas: status.reason, phase: run.phase });

  const lease = await activeLease(ctx, run);
  const bound = lease?.providerLeaseId ? lease : null;
  const base: RecoveryRouteEvidence = {
    kind: "recovery_route",
    phase: runPhase(run),
    sandboxMode: run.sandboxMode,
    turnsDone: run.turnsDone,
    sandboxBound: bound !== null,
    runner: null,
  };
  let route = await decideRoute(ctx, run, base, bound);
  let target = bound;
  if (bound && (route.verdict === "read_runner" || route.verdict === "recover_session")) {
    target = run.sandboxMode === "warm" ? await resumeLease(ctx, run, bound) : bound;
    if (target !== bound) {
      await appendEvent(ctx.db, run.id, "lease_resumed", boot, { leaseId: target.id, previousLeaseId: bound.id, sandboxId: target.providerLeaseId });
    }
  }
  if ((route.verdict === "read_runner" || route.verdict === "recover_session" || route.verdict === "recover_bootstrap") && target?.providerLeaseId) {
    // A sandbox that stopped while no controller watched it (Daytona's auto-stop) is started
    // again before anything is read from it, or the run ends by the engine's verdict.
    if ((await bringUpSandbox(ctx, run, target)) === "ended") return false;
  }
  if (route.verdict === "read_runner" && target?.providerLeaseId) {
    // The run's own record can lag the sandbox by one step: the runner's durable state says
    // whether it never started, or already opened its session. A read that fails throws.
    const state = await readRunnerState(ctx.provider, target.providerLeaseId);
    const process = (await ctx.runner.process(target.providerLeaseId)).state;
    const own = state !== null && state.runId === run.id && state.runnerInstanceId === run.runnerInstanceId && state.sessionId === run.sessionId;
    route = await decideRoute(
      ctx,
      run,
      {
        ...base,
        runner: {
          state: state
            ? {
                ownedByRun: own,
                lastConnectionProtocolVersion: state.lastConnectionProtocolVersion,
                lifecycle: state.lifecycle,
                turnInFlight: state.inFlight?.seq ?? null,
                lastProcessedSeq: lastProcessedSeq(state),
              }
            : null,
          process,
        },
      },
      target,
    );
  }

  switch (route.verdict) {
    case "restart_acquire":
      // Nothing reached a runner: the bootstrap simply starts again (an intent that may have
      // created a sandbox is reclaimed by the sweep, since its creator is gone).
      await continueAs(ctx, run, { phase: "acquiring", recoveryMode: route.recoveryMode, recoveryState: null });
      await appendEvent(ctx.db, run.id, "recovery_continues", boot, { mode: route.recoveryMode, why: "no sandbox was bound to a runner yet" });
      return true;
    case "finish":
      await continueAs(ctx, run, { phase: "finishing", recoveryMode: "exact_checkpoint_resume", recoveryState: null });
      return true;
    case "next_turn_sandbox":
      // Between two per-turn sandboxes: the checkpoint carries the session to the next one.
      // A sandbox still bound (its runner stopped with every turn recorded) is given back first.
      if (target) await giveBackTurnSandbox(ctx, run, target);
      else await continueAs(ctx, run, { phase: "acquiring", recoveryMode: "exact_checkpoint_resume", recoveryState: null });
      return true;
    case "restart_bootstrap_fresh":
      await continueAs(ctx, run, { phase: "bootstrapping", recoveryMode: "bootstrap_retry", recoveryState: null });
      await appendEvent(ctx.db, run.id, "recovery_continues", boot, { mode: "bootstrap_retry", why: "no runner was ever started on the sandbox" });
      return true;
    case "recover_bootstrap":
      return recoverBootstrap(ctx, run, requireTarget(run, target), status);
    case "recover_session":
      if (run.phase === "bootstrapping") {
        await appendEvent(ctx.db, run.id, "recovery_continues", boot, { why: "the runner had opened its session before the restart" });
      }
      return recoverSession(ctx, run, requireTarget(run, target), status);
    case "refused":
      await finishRunFailed(ctx, run, route, "the run had opened its session but holds no sandbox lease", { recoveryState: "blocked", recoveryMode: "ambiguous_state" });
      return false;
    case "read_runner":
      throw new Error(`run ${run.id}: recovery asked for the runner without a sandbox to read it on`);
    default:
      return assertNever(route.verdict);
  }
}

/** The highest seq the runner recorded as processed; null when it processed none, undefined when a record cannot be read (not known). */
export function lastProcessedSeq(state: RunnerState): number | null | undefined {
  let last: number | null = null;
  for (const c of state.processedCommands) {
    const parsed = processedCommandSchema.safeParse(c);
    // A record this controller cannot read is not "none": the route then gives nothing back.
    if (!parsed.success) return undefined;
    if (parsed.data.seq > (last ?? 0)) last = parsed.data.seq;
  }
  return last;
}

/**
 * The route's `next_turn_sandbox` on a sandbox still bound: its runner was stopped after its
 * turn was recorded (a kill between the give-back's stop and its release). The lease is taken
 * out of service in the transaction that proves the claimed epoch (§2.10) and moves the run
 * on to its next sandbox, then torn down; a controller that lost the run touches nothing.
 */
async function giveBackTurnSandbox(ctx: ControllerContext, run: Run, lease: EnvironmentLease): Promise<void> {
  const boot = ctx.identity.bootId;
  const marked = await whileCurrent(ctx, run, async (tx) => {
    await tx.run.update({
      where: { id: run.id },
      data: { phase: "acquiring", recoveryMode: "exact_checkpoint_resume", recoveryState: null, status: run.status === "suspended" ? "starting" : run.status },
    });
    await appendEvent(tx, run.id, "turn_sandbox_released", boot, { turn: run.turnsDone, leaseId: lease.id, why: "its runner was stopped with every turn recorded" });
    return markRunLeases(tx, run.id);
  });
  await takeDownLeases(ctx, run.id, marked);
}

/** Start attempts recovery makes on one sandbox before the run ends (docs/rules.md §2.8, "A stopped sandbox"). */
export const MAX_SANDBOX_START_ATTEMPTS = 2;

/**
 * The start attempts already made on this run's sandbox since it last came up, across all
 * the run's leases on it: a warm recovery takes the sandbox up on a new `resumed` lease each
 * time, so a count per lease would start from zero at every recovery and a
 * sandbox that never starts would be tried for ever. A start that brought it up ends the
 * count (a later stop, hours on, has its own budget).
 */
export async function sandboxStartAttempts(ctx: ControllerContext, runId: string, sandboxId: string): Promise<number> {
  const attempts = await ctx.db.runEvent.findMany({
    where: { runId, type: "sandbox_start_attempted", data: { path: ["sandboxId"], equals: sandboxId } },
    orderBy: { id: "desc" },
    select: { data: true },
  });
  const lastUp = attempts.findIndex((e) => (e.data as { restarted?: unknown } | null)?.restarted === true);
  return lastUp === -1 ? attempts.length : lastUp;
}

/**
 * §2.8 applied to a stopped sandbox (docs/rules.md, "A stopped sandbox"): the engine's `stopped_sandbox` verdict,
 * stored as a proof, says proceed, start it again (counted per sandbox), wait for a
 * transition, or end the run with `sandbox_not_restartable`. A start that did not take,
 * or a transition, throws: the attempt is counted and recovery looks again after its back-off.
 */
async function bringUpSandbox(ctx: ControllerContext, run: Run, lease: EnvironmentLease): Promise<"proceed" | "ended"> {
  const boot = ctx.identity.bootId;
  const sandboxId = lease.providerLeaseId!;
  const startAttempts = await sandboxStartAttempts(ctx, run.id, sandboxId);
  const up = await bringSandboxUp(ctx.provider, { id: sandboxId }, { startAttempts, maxStartAttempts: MAX_SANDBOX_START_ATTEMPTS });
  if (up.attempted) await appendEvent(ctx.db, run.id, "sandbox_start_attempted", boot, { leaseId: lease.id, sandboxId, restarted: up.restarted, error: up.error });
  await recordRunProof(ctx, run, up.decision, up.evidence, { leaseId: lease.id, sandboxId });
  switch (up.decision.verdict) {
    case "proceed":
      return "proceed";
    case "end_run":
      await finishRunFailed(ctx, run, up.decision, `the run's sandbox ${sandboxId} is ${up.evidence.sandboxState ?? "gone"} and could not be started again`);
      return "ended";
    case "wait":
    case "start_sandbox":
      throw new Error(`sandbox ${sandboxId} is ${up.evidence.sandboxState}${up.error ? ` (start failed: ${up.error})` : ""}: recovery looks again after its back-off`);
    default:
      return assertNever(up.decision.verdict);
  }
}

/** Routes with the engine and stores the route as a proof (one per routing step). */
async function decideRoute(ctx: ControllerContext, run: Run, evidence: RecoveryRouteEvidence, lease: EnvironmentLease | null): Promise<RecoveryRouteResult> {
  const verdict = routeRecovery(evidence);
  await recordRunProof(ctx, run, verdict, evidence, { leaseId: lease?.id ?? null, sandboxId: lease?.providerLeaseId ?? null });
  return verdict;
}

function requireTarget(run: Run, target: EnvironmentLease | null): EnvironmentLease {
  if (!target?.providerLeaseId) throw new Error(`run ${run.id} in phase ${run.phase} without a sandbox`);
  return target;
}

function runPhase(run: Run): RecoveryRouteEvidence["phase"] {
  const phase = run.phase;
  if (phase === null) return null;
  if ((RUN_PHASES as readonly string[]).includes(phase)) return phase as (typeof RUN_PHASES)[number];
  throw new Error(`run ${run.id} has an unknown phase ${phase}`);
}

/**
 * A recovery (or the execution after it) threw (§2.8): the attempt is counted and judged
 * by the engine (`recovery_attempt` proof). While attempts are left the run is let go with
 * a back-off (`recovery_not_before`), so recovery claims it again later; when they are
 * spent it ends with `native_recovery_attempts_exhausted` and Retry. A run this controller
 * no longer executes is left alone.
 */
export async function countFailedAttempt(ctx: ControllerContext, claimed: RunFence, err: unknown, at?: Date): Promise<void> {
  const boot = ctx.identity.bootId;
  // The back-off is compared with the database's clock by whichever controller claims the run next.
  const now = at ?? (await databaseNow(ctx.db));
  const runId = claimed.id;
  const run = await ctx.db.run.findUnique({ where: { id: runId } });
  // Judged only on the epoch this controller claimed: a fresh read's epoch is whoever holds the run now.
  if (!run || run.executorEpoch !== claimed.executorEpoch || run.executorBootId !== boot || !(ACTIVE as readonly string[]).includes(run.status)) return;
  const message = ProviderError.is(err) ? err.message : err instanceof Error ? err.message : String(err);
  const errors = Array.isArray(run.recoveryErrors) ? run.recoveryErrors.filter((e): e is string => typeof e === "string") : [];
  const evidence: RecoveryAttemptEvidence = {
    kind: "recovery_attempt",
    now: now.toISOString(),
    attempts: run.recoveryAttempts + 1,
    maxAttempts: ctx.config.recoveryMaxAttempts,
    backoffBaseMs: ctx.config.recoveryBackoffMs,
    lastError: message,
    errors,
    // What the error was, and whether the provider is unavailable beyond it (§2.8).
    ...(await outageEvidence(ctx, err)),
    // How long this run has waited on 429s already: a 429 that never ends is counted (§2.8).
    rateLimit: {
      waits: run.rateLimitWaits,
      since: run.rateLimitedSince?.toISOString() ?? null,
      maxWaits: ctx.config.rateLimitMaxWaits,
      maxWaitMs: ctx.config.rateLimitMaxWaitMs,
    },
  };
  const verdict = judgeRecoveryAttempt(evidence);
  if (verdict.verdict === "wait") {
    const rateLimited = evidence.failure?.status === 429;
    // An outage is not the run's failure: not counted, no back-off of its own; it waits where
    // it stands (its status and phase kept) and recovery takes it up once the provider is back.
    await whileCurrent(ctx, run, async (tx) => {
      await recordProof(tx, verdict, evidence, boot, { runId });
      await appendEvents(tx, [{ runId, bootId: boot, type: "provider_wait", data: { error: message, unavailableSince: evidence.provider?.unavailableSince ?? null, notBefore: verdict.notBefore } }]);
      await tx.run.update({
        where: { id: runId },
        data: {
          providerWaitSince: run.providerWaitSince ?? now,
          ...(rateLimited ? { rateLimitWaits: { increment: 1 }, rateLimitedSince: run.rateLimitedSince ?? now } : {}),
          recoveryNotBefore: verdict.notBefore ? new Date(verdict.notBefore) : null,
          executorBootId: null,
          executorEpoch: { increment: 1 },
        },
      });
    });
    return;
  }
  const landing = {
    proofs: [{ verdict, evidence }],
    events: [{ type: "recovery_attempt_failed", data: { attempts: evidence.attempts, verdict: verdict.verdict, error: message, notBefore: verdict.notBefore } }],
  };
  // The last few errors are kept on the run; the proofs keep every one.
  const kept = json([...errors, message].slice(-20));
  if (verdict.verdict === "try_again") {
    // Let go with a back-off: a requeue of its own (epoch + 1), with its proof, or nothing.
    await whileCurrent(ctx, run, async (tx) => {
      for (const p of landing.proofs) await recordProof(tx, p.verdict, p.evidence, boot, { runId });
      await appendEvents(tx, landing.events.map((e) => ({ ...e, runId, bootId: boot })));
      await tx.run.update({
        where: { id: runId },
        data: {
          recoveryAttempts: evidence.attempts,
          recoveryErrors: kept,
          recoveryNotBefore: verdict.notBefore ? new Date(verdict.notBefore) : null,
          executorBootId: null,
          executorEpoch: { increment: 1 },
        },
      });
    });
    return;
  }
  await fenced(ctx, run).update({ where: { id: runId }, data: { recoveryAttempts: evidence.attempts, recoveryErrors: kept } });
  await finishRunFailed(ctx, run, verdict, `recovery failed ${evidence.attempts} times; last: ${message}`, { landing });
}

async function continueAs(
  ctx: ControllerContext,
  run: Run,
  data: Pick<Prisma.RunUpdateInput, "phase" | "recoveryMode" | "recoveryState">,
): Promise<void> {
  await fenced(ctx, run).update({ where: { id: run.id }, data: { ...data, status: run.status === "suspended" ? "starting" : run.status } });
}

async function readState(ctx: ControllerContext, sandboxId: string): Promise<{ state: RunnerState | null }> {
  // A read that fails is not "no state": it throws, and the attempt is counted (§2.8).
  return { state: await readRunnerState(ctx.provider, sandboxId) };
}

async function fileExists(ctx: ControllerContext, sandboxId: string, path: string): Promise<boolean> {
  return (await ctx.provider.readFile(sandboxId, path)) !== null;
}

/** §2.2: restart the bootstrap from the sandbox's own runner state, or refuse. */
async function recoverBootstrap(ctx: ControllerContext, run: Run, lease: EnvironmentLease, status: ExecutorStatus): Promise<boolean> {
  const boot = ctx.identity.bootId;
  const sandboxId = lease.providerLeaseId!;
  const runnerInstanceId = run.runnerInstanceId ?? "unknown";
  const sessionId = run.sessionId ?? "unknown";
  const claim = await ctx.db.recoveryClaim.create({
    data: {
      runId: run.id,
      kind: "bootstrap_incomplete",
      providerLeaseId: sandboxId,
      remoteCwd: lease.remoteCwd,
      runnerInstanceId,
      sessionId,
      controllerBootId: boot,
      restartKind: status.restartKind,
    },
  });
  await fenced(ctx, run).update({ where: { id: run.id }, data: { recoveryState: "bootstrap_incomplete", recoveryMode: "bootstrap_retry" } });
  await appendEvent(ctx.db, run.id, "claim_made", boot, { claimId: claim.id, kind: claim.kind, restartKind: status.restartKind });

  const before = await readState(ctx, sandboxId);
  // Only this run's own runner (by the identity in its state) is stopped before judging.
  let runnerProcess: BootstrapRestartEvidence["runnerProcess"] = "unknown";
  try {
    if (before.state && before.state.runId === run.id && before.state.runnerInstanceId === runnerInstanceId) {
      await ctx.runner.stop(sandboxId);
    }
    const proc = await ctx.runner.process(sandboxId);
    runnerProcess = proc.state;
  } catch (err) {
    ctx.log.warn({ runId: run.id, err: String(err) }, "runner process could not be established");
  }
  const after = await readState(ctx, sandboxId);
  const state = after.state ?? before.state;
  const local = readRunnerRoot(ctx.config.home, ctx.config.instanceId, run.id);
  const localProof = local && local.runnerInstanceId === runnerInstanceId && local.sandboxId === sandboxId ? { recordedAt: new Date().toISOString() } : null;
  if (localProof) await appendEvent(ctx.db, run.id, "local_restart_proof", boot, { recordedAt: localProof.recordedAt, home: ctx.config.home });

  const evidence: BootstrapRestartEvidence = {
    kind: "bootstrap_restart",
    acquisitionOutcome: lease.acquisitionOutcome,
    run: { id: run.id, runnerInstanceId, sessionId },
    claim: { kind: "bootstrap_incomplete", runId: run.id, runnerInstanceId, sessionId },
    localProof,
    // The lifecycle as it was before this controller stopped the runner.
    runnerState: state ? { ...runnerStateEvidence(state), lifecycle: before.state?.lifecycle ?? state.lifecycle } : null,
    providerStatePresent: state?.providerStatePresent === true || (await fileExists(ctx, sandboxId, PROVIDER_STATE_PATH)),
    failoverBackup: await fileExists(ctx, sandboxId, FAILOVER_BACKUP_PATH),
    archivedRotationSnapshot: await fileExists(ctx, sandboxId, ROTATION_SNAPSHOT_PATH),
    runnerProcess,
  };
  const verdict = evaluateBootstrapRestart(evidence);
  await recordRunProof(ctx, run, verdict, evidence, { claimId: claim.id, leaseId: lease.id, sandboxId });
  await ctx.db.recoveryClaim.update({ where: { id: claim.id }, data: { disposition: verdict.verdict, decidedAt: new Date() } });
  if (state) await fenced(ctx, run).update({ where: { id: run.id }, data: { lastRunnerState: json(state), lastRunnerStateAt: new Date() } });

  if (verdict.verdict === "restart_bootstrap") {
    await continueAs(ctx, run, { phase: "bootstrapping", recoveryMode: "bootstrap_retry", recoveryState: null });
    await appendEvent(ctx.db, run.id, "bootstrap_restart", boot, { claimId: claim.id, proofSource: (verdict as { proofSource?: string }).proofSource ?? null });
    return true;
  }
  await finishRunFailed(ctx, run, verdict, `bootstrap restart refused: ${failedChecks(verdict.checks)}`, {
    recoveryState: "blocked",
  });
  return false;
}

/** §2.1: reattach to the surviving runner on the claimed lease, or refuse. */
async function recoverSession(ctx: ControllerContext, run: Run, lease: EnvironmentLease, status: ExecutorStatus): Promise<boolean> {
  const boot = ctx.identity.bootId;
  const sandboxId = lease.providerLeaseId!;
  const staged = run.sandboxMode === "per_turn";
  const checkpoint = (run.checkpoint ?? {}) as { providerLeaseId?: string | null; remoteCwd?: string | null };
  // The claim names what the run's own checkpoint names, and nothing else (§2.1): filling a
  // gap from the target would make the binding compare a value with itself.
  const claimed = { providerLeaseId: checkpoint.providerLeaseId ?? null, remoteCwd: checkpoint.remoteCwd ?? null };
  const claim = await ctx.db.recoveryClaim.create({
    data: {
      runId: run.id,
      kind: staged ? "staged_attachment" : "reattach_remote_runner",
      providerLeaseId: claimed.providerLeaseId,
      remoteCwd: claimed.remoteCwd,
      runnerInstanceId: run.runnerInstanceId,
      sessionId: run.sessionId,
      controllerBootId: boot,
      restartKind: status.restartKind,
    },
  });
  await fenced(ctx, run).update({ where: { id: run.id }, data: { recoveryState: "awaiting_runner_reattach", recoveryMode: "exact_checkpoint_resume" } });
  await appendEvent(ctx.db, run.id, "claim_made", boot, { claimId: claim.id, kind: claim.kind, restartKind: status.restartKind });

  const { state } = await readState(ctx, sandboxId);
  const evidence: LeaseBindingEvidence = {
    kind: "lease_binding",
    path: staged ? "staged_attachment" : "remote_reattach",
    claim: { runId: run.id, remote: claimed },
    target: { runId: lease.runId ?? run.id, providerLeaseId: sandboxId, remoteCwd: state?.workDir ?? null, acquisitionOutcome: lease.acquisitionOutcome },
    staged: staged
      ? {
          headerReadable: state !== null,
          sourceRunMatches: state?.runId === run.id,
          // A runner that does not say which program it runs proves nothing: missing is a refusal.
          ...(state?.programDigest ? { templateDigestMatches: state.programDigest === runnerProgramDigest() } : {}),
          runnerIdentityMatches: state?.runnerInstanceId === run.runnerInstanceId,
        }
      : null,
  };
  const verdict = leaseBinding(ctx.config, evidence);
  await recordRunProof(ctx, run, verdict, evidence, { claimId: claim.id, leaseId: lease.id, sandboxId });
  await ctx.db.recoveryClaim.update({ where: { id: claim.id }, data: { disposition: verdict.verdict, decidedAt: new Date() } });

  if (verdict.verdict !== "admitted") {
    // The run rests where the verdict says (§2.1): its continuation code; the refusal code stays on the proof.
    await appendEvent(ctx.db, run.id, "continuation_blocked", boot, { code: verdict.code, restsIn: restingCode(verdict) });
    await finishRunFailed(ctx, run, verdict, `reattach refused (${verdict.code ?? "refused"}): ${failedChecks(verdict.checks)}`, {
      recoveryState: "blocked",
    });
    return false;
  }
  // The lease is proven. A runner that died (its sandbox stopped, or it was killed) goes on
  // only by the engine's runner_resume verdict; a reattach that fails throws and counts as a
  // failed attempt (§2.8).
  if (!(await resumeIfDead(ctx, run, lease, state, status))) return false;
  const reattached = await ctx.runner.reattach(sandboxId);
  await fenced(ctx, run).update({
    where: { id: run.id },
    data: {
      status: "running",
      phase: "session_open",
      recoveryState: null,
      lastRunnerState: json(reattached),
      lastRunnerStateAt: new Date(),
      checkpoint: json({ ...checkpoint, turn: run.turnsDone, sessionId: run.sessionId, leaseId: lease.id, providerLeaseId: sandboxId, remoteCwd: claimed.remoteCwd, at: new Date().toISOString() }),
    },
  });
  await appendEvent(ctx.db, run.id, "runner_reattached", boot, { sandboxId, reconnectCount: reattached.reconnectCount });
  return true;
}

/**
 * `resume_dead_runner`: the runner process named by the state is asked for, the engine decides
 * (reattach a live one, resume a dead one on its own state, or end the run with
 * runner_not_resumable), and the verdict is stored with a claim of its own. Returns false when
 * the run was ended.
 */
async function resumeIfDead(ctx: ControllerContext, run: Run, lease: EnvironmentLease, state: RunnerState | null, status: ExecutorStatus): Promise<boolean> {
  const boot = ctx.identity.bootId;
  const sandboxId = lease.providerLeaseId!;
  const process = (await ctx.runner.process(sandboxId)).state;
  const evidence: RunnerResumeEvidence = {
    kind: "runner_resume",
    run: { runId: run.id, runnerInstanceId: run.runnerInstanceId, sessionId: run.sessionId },
    state: state
      ? {
          runId: state.runId,
          runnerInstanceId: state.runnerInstanceId,
          sessionId: state.sessionId,
          lifecycle: state.lifecycle,
          lastConnectionProtocolVersion: state.lastConnectionProtocolVersion,
          turnInFlight: state.inFlight?.seq ?? null,
        }
      : null,
    process,
  };
  const verdict = decideRunnerResume(evidence);
  if (verdict.verdict === "reattach") {
    await recordRunProof(ctx, run, verdict, evidence, { leaseId: lease.id, sandboxId });
    return true;
  }
  const claim = await ctx.db.recoveryClaim.create({
    data: {
      runId: run.id,
      kind: "resume_dead_runner",
      providerLeaseId: sandboxId,
      remoteCwd: lease.remoteCwd,
      runnerInstanceId: run.runnerInstanceId,
      sessionId: run.sessionId,
      controllerBootId: boot,
      restartKind: status.restartKind,
      disposition: verdict.verdict,
      decidedAt: new Date(),
    },
  });
  await recordRunProof(ctx, run, verdict, evidence, { claimId: claim.id, leaseId: lease.id, sandboxId });
  if (verdict.verdict === "refused") {
    await finishRunFailed(ctx, run, verdict, `the runner died and cannot be resumed: ${failedChecks(verdict.checks)}`, { recoveryState: "blocked" });
    return false;
  }
  await assertCurrent(ctx, run);
  const resumed = await ctx.runner.resume(sandboxId, { runId: run.id, runnerInstanceId: run.runnerInstanceId!, sessionId: run.sessionId! });
  await appendEvent(ctx.db, run.id, "runner_resumed", boot, { claimId: claim.id, sandboxId, pid: resumed.process?.pid ?? null, resumes: resumed.resumes ?? null });
  return true;
}

function failedChecks(checks: ReadonlyArray<{ name: string; ok: boolean }>): string {
  const failed = checks.filter((c) => !c.ok).map((c) => c.name);
  return failed.length ? failed.join(", ") : "no check passed";
}

/** A proof about a run this controller executes lands only while its claimed epoch is current (§2.10). */
async function recordRunProof(ctx: ControllerContext, run: RunFence, verdict: Verdict, evidence: unknown, links: Omit<ProofLinks, "runId"> = {}): Promise<void> {
  await whileCurrent(ctx, run, (tx) => recordProof(tx, verdict, evidence, ctx.identity.bootId, { runId: run.id, ...links }));
}
