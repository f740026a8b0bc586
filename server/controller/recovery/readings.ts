import type { EnvironmentLease, Run } from "../../db/client";
import { runnerStateEvidence, type RecoveryNeed, type RecoveryWalkEvidence, type WalkLease, type WalkRunnerState } from "../../engine";
import { processedCommandSchema, PROVIDER_STATE_PATH, RUNNER_ROOT, readRunnerState, type RunnerState } from "../../providers/runner";
import { resumeLease } from "../acquire";
import type { ControllerContext } from "../context";
import { readRunnerRoot } from "../home";
import { appendEvent } from "../records";
import { readSandbox, startSandbox } from "../stopped-sandbox";

/**
 * Recovery's answers to the recovery walk's needs (engine/recovery-walk.ts): each read is made
 * for real and a read that fails throws (the attempt is counted, §2.8: a failed read is never
 * "nothing there"); each act (`resume_lease`, `sandbox_start`, `runner_stop`) is done, after
 * its proofs were stored by the caller. The restart forecast answers the same needs read-only
 * (controller/forecast.ts).
 */

export const FAILOVER_BACKUP_PATH = `${RUNNER_ROOT}/failover-backup.json`;
export const ROTATION_SNAPSHOT_PATH = `${RUNNER_ROOT}/rotation-snapshot.archived.json`;

/** Start attempts recovery makes on one sandbox before the run ends (docs/rules.md §2.8, "A stopped sandbox"). */
export const MAX_SANDBOX_START_ATTEMPTS = 2;

/** What recovery has read and done so far for one run: the walk's evidence, and the rows and raw states behind it. */
export interface RecoveryReadings {
  evidence: RecoveryWalkEvidence;
  /** The run's leases by id (the bound one, and the one a warm recovery took up again). */
  leases: Map<string, EnvironmentLease>;
  /** runner-state.json as read, and as read again after this run's own runner was stopped. */
  runnerState: RunnerState | null;
  stoppedRunnerState: RunnerState | null;
}

/** The run as the walk takes it: its phase, mode, turns, identities and what its checkpoint names (never filled from a lease). */
export function walkRun(run: Run): RecoveryWalkEvidence["run"] {
  const checkpoint = (run.checkpoint ?? {}) as { providerLeaseId?: string | null; remoteCwd?: string | null };
  return {
    id: run.id,
    phase: run.phase,
    sandboxMode: run.sandboxMode,
    turnsDone: run.turnsDone,
    runnerInstanceId: run.runnerInstanceId,
    sessionId: run.sessionId,
    checkpoint: { providerLeaseId: checkpoint.providerLeaseId ?? null, remoteCwd: checkpoint.remoteCwd ?? null },
  };
}

export function walkLease(lease: EnvironmentLease): WalkLease {
  return { id: lease.id, runId: lease.runId, providerLeaseId: lease.providerLeaseId!, remoteCwd: lease.remoteCwd, acquisitionOutcome: lease.acquisitionOutcome };
}

/** The lease the walk reads and acts on: the one taken up again, else the bound one. */
export function targetOf(r: RecoveryReadings): EnvironmentLease | null {
  const t = r.evidence.resumedLease ?? r.evidence.lease;
  return t ? (r.leases.get(t.id) ?? null) : null;
}

export async function answerNeed(ctx: ControllerContext, run: Run, need: RecoveryNeed, r: RecoveryReadings): Promise<void> {
  const boot = ctx.identity.bootId;
  const target = targetOf(r);
  if (!target?.providerLeaseId) throw new Error(`run ${run.id}: recovery needs ${need} without a sandbox`);
  const sandboxId = target.providerLeaseId;
  switch (need) {
    case "resume_lease": {
      const resumed = await resumeLease(ctx, run, target);
      r.leases.set(resumed.id, resumed);
      r.evidence.resumedLease = walkLease(resumed);
      await appendEvent(ctx.db, run.id, "lease_resumed", boot, { leaseId: resumed.id, previousLeaseId: target.id, sandboxId });
      return;
    }
    case "sandbox":
      r.evidence.sandbox = await readSandbox(ctx.provider, sandboxId, await sandboxStartAttempts(ctx, run.id, sandboxId));
      return;
    case "sandbox_start": {
      const before = r.evidence.sandbox?.ok ? r.evidence.sandbox.startAttempts : 0;
      const started = await startSandbox(ctx.provider, sandboxId, before);
      await appendEvent(ctx.db, run.id, "sandbox_start_attempted", boot, { leaseId: target.id, sandboxId, restarted: started.restarted, error: started.error });
      r.evidence.sandboxStart = { ok: true, state: started.state, desiredState: started.desiredState, startAttempts: started.startAttempts, error: started.error };
      return;
    }
    case "runner": {
      const state = await readRunnerState(ctx.provider, sandboxId);
      const process = (await ctx.runner.process(sandboxId)).state;
      r.runnerState = state;
      r.evidence.runner = { ok: true, state: state ? runnerReading(state) : null, process };
      return;
    }
    case "runner_stop": {
      // A stop or look that fails leaves the process unknown (never guessed); the state is read again either way.
      let process: "running" | "stopped" | "absent" | "unknown" = "unknown";
      try {
        await ctx.runner.stop(sandboxId);
        process = (await ctx.runner.process(sandboxId)).state;
      } catch (err) {
        ctx.log.warn({ runId: run.id, err: String(err) }, "runner process could not be established");
      }
      const after = await readRunnerState(ctx.provider, sandboxId);
      r.stoppedRunnerState = after;
      r.evidence.runnerStop = { ok: true, state: after ? runnerReading(after) : null, process };
      return;
    }
    case "files": {
      const exists = async (path: string) => (await ctx.provider.readFile(sandboxId, path)) !== null;
      const local = readRunnerRoot(ctx.config.home, ctx.config.instanceId, run.id);
      const localProof = local && local.runnerInstanceId === (run.runnerInstanceId ?? "unknown") && local.sandboxId === sandboxId ? { recordedAt: new Date().toISOString() } : null;
      r.evidence.files = {
        ok: true,
        providerStatePresent: await exists(PROVIDER_STATE_PATH),
        failoverBackup: await exists(FAILOVER_BACKUP_PATH),
        archivedRotationSnapshot: await exists(ROTATION_SNAPSHOT_PATH),
        localProof,
      };
      return;
    }
    default:
      return need;
  }
}

/** runner-state.json as the walk takes it. */
export function runnerReading(s: RunnerState): WalkRunnerState {
  return {
    ...runnerStateEvidence(s),
    providerStatePresent: s.providerStatePresent,
    inFlightSeq: s.inFlight?.seq ?? null,
    lastProcessedSeq: lastProcessedSeq(s),
    workDir: s.workDir ?? null,
    programDigest: s.programDigest ?? null,
  };
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
