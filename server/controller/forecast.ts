import { databaseNow } from "../db/clock";
import type { EnvironmentLease, Run } from "../db/client";
import { isProviderUnavailable, LIVE_RUN_STATUSES, type RunnerReleases } from "../engine";
import { forecastRecovery, judgeRunnerProcess, type ForecastEvidence, type ForecastReadError } from "../engine/forecast";
import { inLanes } from "../lib/lanes";
import { failureOf } from "../providers/breaker";
import { PROVIDER_STATE_PATH, readRunnerState, runnerReleases, type RunnerState } from "../providers/runner";
import { countForecast, type Forecast, type RunForecast } from "../shared/forecast";
import { companyWhere, type CompanyScope } from "../shared/roles";
import type { ControllerContext } from "./context";
import { readRunnerRoot } from "./home";
import { readKnownRunnerReleases } from "./known-runner-releases";
import { outageEvidence } from "./outage";
import { FAILOVER_BACKUP_PATH, MAX_SANDBOX_START_ATTEMPTS, ROTATION_SNAPSHOT_PATH, runnerReading, sandboxStartAttempts, walkLease, walkRun } from "./recovery";
import { recoveryRules } from "./rules";

/**
 * The restart forecast's shell (docs/rules.md §2.12): for every run that is not terminal, reads
 * what a controller restarted now would read when it takes the run over — the run and its
 * active lease, the provider's `get` of the sandbox, runner-state.json through
 * `files/download`, the runner process through a read-only `cat /proc/PID/stat`
 * (`peekProcess`: `ctx.runner.process` would upload runnerd first, a write), §2.2's files, the
 * local restart proof — and asks `forecastRecovery` (the engine's own proofs, in recovery's
 * order). It claims nothing, writes nothing, bumps no epoch, starts no sandbox, calls no
 * runnerd; it stores nothing (the caller may store the answer).
 *
 * Reads go `lanes` at a time (`inLanes`), each bounded by `readTimeoutMs`: a sandbox that
 * does not answer costs its lane that long, never the forecast its end.
 */

export interface ForecastOptions {
  runIds?: string[];
  /** Called after each run is forecast (for progress on a terminal). */
  onProgress?: (done: number, total: number) => void;
  /** Runs judged at once (each holds at most one provider read in flight). */
  lanes?: number;
  /** The bound on each provider or runner read (ms). */
  readTimeoutMs?: number;
  /**
   * The runner programs to judge with, when not this build's (`runnerReleases()`): a wave's
   * forecast for a restart by the next build (server/waves/run/forecast-at-kill.ts). Either is
   * joined by the programs this database's controllers shipped, as recovery's are
   * (known-runner-releases.ts).
   */
  releases?: RunnerReleases;
}

export const FORECAST_LANES = 8;
export const FORECAST_READ_TIMEOUT_MS = 10_000;

export async function takeForecast(ctx: ControllerContext, scope: CompanyScope, options: ForecastOptions = {}): Promise<Forecast> {
  const started = performance.now();
  // The database's clock, as recovery judges back-offs on it.
  const now = await databaseNow(ctx.db);
  const runs = await ctx.db.run.findMany({
    where: {
      instanceId: ctx.config.instanceId,
      status: { in: [...LIVE_RUN_STATUSES] },
      ...companyWhere(scope),
      ...(options.runIds ? { id: { in: options.runIds } } : {}),
    },
    orderBy: { id: "asc" },
  });
  // Each run's active lease, as `activeLease` picks it (the latest), in one read.
  const leases = new Map<string, EnvironmentLease>();
  const ids = runs.filter((r) => r.status !== "queued").map((r) => r.id);
  for (let i = 0; i < ids.length; i += 1000) {
    const page = await ctx.db.environmentLease.findMany({ where: { runId: { in: ids.slice(i, i + 1000) }, status: "active" }, orderBy: { createdAt: "asc" } });
    for (const l of page) if (l.runId) leases.set(l.runId, l);
  }
  const releases = await readKnownRunnerReleases(ctx.db, options.releases ?? runnerReleases());
  const out: RunForecast[] = new Array<RunForecast>(runs.length);
  let done = 0;
  await inLanes(runs, options.lanes ?? FORECAST_LANES, async (run, i) => {
    out[i] = await forecastOne(ctx, run, leases.get(run.id) ?? null, { now, releases, readTimeoutMs: options.readTimeoutMs ?? FORECAST_READ_TIMEOUT_MS });
    done += 1;
    options.onProgress?.(done, runs.length);
  });
  return { takenAt: now.toISOString(), durationMs: Math.round(performance.now() - started), runs: out, counts: countForecast(out) };
}

async function forecastOne(ctx: ControllerContext, run: Run, active: EnvironmentLease | null, at: { now: Date; releases: RunnerReleases; readTimeoutMs: number }): Promise<RunForecast> {
  const head = {
    runId: run.id,
    companyId: run.companyId,
    taskId: run.taskId,
    status: run.status as RunForecast["status"],
    phase: run.phase,
    executorBootId: run.executorBootId,
    executorEpoch: run.executorEpoch,
  };
  if (run.status === "queued") {
    return { ...head, prediction: "continues", path: "claim_queued", code: null, restsIn: null, owner: null, canRetry: null, reason: "Queued: any controller's tick claims it.", proofs: [], evidence: [], readError: null };
  }
  const lease = active?.providerLeaseId ? active : null;
  const evidence: ForecastEvidence = {
    now: at.now.toISOString(),
    run: {
      ...walkRun(run),
      status: run.status,
      recoveryAttempts: run.recoveryAttempts,
      recoveryErrors: Array.isArray(run.recoveryErrors) ? run.recoveryErrors.filter((e): e is string => typeof e === "string") : [],
    },
    limits: { recoveryMaxAttempts: ctx.config.recoveryMaxAttempts, recoveryBackoffMs: ctx.config.recoveryBackoffMs, maxSandboxStartAttempts: MAX_SANDBOX_START_ATTEMPTS },
    lease: lease ? walkLease(lease) : null,
    runnerReleases: at.releases,
  };
  const rules = recoveryRules(ctx.config);
  const sandboxId = lease?.providerLeaseId ?? "";
  let state: RunnerState | null = null;
  // At most one read of each kind: the engine asks, the shell reads, the engine walks again.
  for (let step = 0; step < 4; step++) {
    const answer = forecastRecovery(evidence, rules);
    if (!("need" in answer)) {
      return {
        ...head,
        prediction: answer.prediction,
        path: answer.path,
        code: answer.code,
        restsIn: answer.restsIn,
        owner: answer.owner,
        canRetry: answer.canRetry,
        reason: answer.reason,
        proofs: answer.steps.map((s) => ({ kind: s.verdict.kind, verdict: s.verdict.verdict, code: s.verdict.code, checks: s.verdict.checks })),
        evidence: answer.steps.map((s) => s.evidence),
        readError: answer.readError,
      };
    }
    switch (answer.need) {
      case "sandbox":
        evidence.sandbox = await read(ctx, at.readTimeoutMs, async (signal) => {
          const view = await ctx.provider.getById(sandboxId, { signal });
          return { state: view?.state ?? null, desiredState: view?.desiredState ?? null, startAttempts: await sandboxStartAttempts(ctx, run.id, sandboxId) };
        });
        break;
      case "runner":
        evidence.runner = await read(ctx, at.readTimeoutMs, async (signal) => {
          state = await readRunnerState(ctx.provider, sandboxId, { signal });
          const pid = state?.process?.pid;
          const look = pid === undefined ? { procfs: true, stat: null } : await ctx.runner.peekProcess(sandboxId, pid, { signal, timeoutMs: at.readTimeoutMs });
          return { state: state ? runnerReading(state) : null, process: judgeRunnerProcess(state, look) };
        });
        break;
      case "files":
        evidence.files = await read(ctx, at.readTimeoutMs, async (signal) => {
          const exists = async (path: string) => (await ctx.provider.readFile(sandboxId, path, { signal })) !== null;
          const local = readRunnerRoot(ctx.config.home, ctx.config.instanceId, run.id);
          const localProof = local && local.runnerInstanceId === (run.runnerInstanceId ?? "unknown") && local.sandboxId === sandboxId ? { recordedAt: at.now.toISOString() } : null;
          return {
            providerStatePresent: (state as RunnerState | null)?.providerStatePresent === true || (await exists(PROVIDER_STATE_PATH)),
            failoverBackup: await exists(FAILOVER_BACKUP_PATH),
            archivedRotationSnapshot: await exists(ROTATION_SNAPSHOT_PATH),
            localProof,
          };
        });
        break;
    }
  }
  throw new Error(`forecast of run ${run.id}: the engine kept asking for readings`);
}

/** One bounded read; a failure becomes the error recovery would judge (with the provider's reachability when it says unavailable). */
async function read<T>(ctx: ControllerContext, timeoutMs: number, work: (signal: AbortSignal) => Promise<T>): Promise<({ ok: true } & T) | { ok: false; error: ForecastReadError }> {
  try {
    return { ok: true, ...(await work(AbortSignal.timeout(timeoutMs))) };
  } catch (err) {
    return { ok: false, error: await readError(ctx, err) };
  }
}

async function readError(ctx: ControllerContext, err: unknown): Promise<ForecastReadError> {
  const message = err instanceof Error ? err.message : String(err);
  const failure = failureOf(err);
  if (!isProviderUnavailable(failure)) return { message, failure };
  if (ctx.breaker) {
    const { provider } = await outageEvidence(ctx, err);
    return { message, failure, ...(provider ? { provider } : {}) };
  }
  // No breaker outside a controller: one probe, as the breaker's (a name that never exists; any answer is an answer).
  const since = new Date().toISOString();
  try {
    await ctx.provider.getByName(`${ctx.config.sandboxPrefix}-breaker-probe`, { signal: AbortSignal.timeout(5_000) });
    return { message, failure, provider: { reachable: true, unavailableSince: null, lastError: null, nextProbeAt: null } };
  } catch (probeErr) {
    return { message, failure, provider: { reachable: false, unavailableSince: since, lastError: probeErr instanceof Error ? probeErr.message : String(probeErr), nextProbeAt: null } };
  }
}
