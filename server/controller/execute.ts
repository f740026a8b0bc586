import crypto from "node:crypto";
import type { EnvironmentLease, Run } from "../db/client";
import { ProviderError } from "../providers/errors";
import { isBindConflict, isNodeMissing, TurnDeadlineError, type TurnResult } from "../providers/runner";
import { AcquireError, acquireSandbox } from "./acquire";
import type { ControllerContext } from "./context";
import { crashPoint } from "./crash";
import { writeRunnerRoot } from "./home";
import { judgeTurnResult } from "../engine";
import { finishRunFailed, finishRunSucceeded, handleStartupFailure } from "./outcome";
import { appendEvent, json } from "./records";
import { assertCurrent, fenced, rereadOwnRun, RunLost, whileCurrent, type RunFence } from "./fence";
import { markRunLeases, takeDownLeases } from "./teardown";
import { waitsForProvider } from "./outage";
import { drainDeadline } from "./drain";
import { endTurnPastDeadline, turnBudgetMs, turnEvidence, turnFailureDetail } from "./turn-timeout";

/**
 * Executes a run from wherever its phase says it stands, so a fresh start and a
 * recovered run take the same path:
 *   acquiring → bootstrapping (runner start, session.open) → session_open (turns) → finishing.
 * A per-turn run acquires a fresh sandbox for each turn; a warm run keeps one.
 * Between steps a drain suspends the run instead of going on.
 */
export async function executeRun(ctx: ControllerContext, claimed: RunFence): Promise<void> {
  for (;;) {
    // Each step reads the run for its phase; the fence stays the epoch this controller
    // claimed (§2.10), never whoever holds the run now.
    const run = await rereadOwnRun(ctx, claimed);
    if (run.executorBootId !== ctx.identity.bootId) throw new RunLost(claimed.id, claimed.executorEpoch);
    if (ctx.drain.signal.aborted) return suspendRun(ctx, run);

    switch (run.phase ?? "acquiring") {
      case "acquiring": {
        const turn = run.sandboxMode === "per_turn" ? run.turnsDone + 1 : null;
        let lease: EnvironmentLease;
        try {
          lease = await acquireSandbox(ctx, run, turn);
        } catch (err) {
          // An unavailable provider is judged as an outage (§2.8, countFailedAttempt), never counted as a startup failure.
          if ((!(err instanceof AcquireError) && !ProviderError.is(err)) || waitsForProvider(err)) throw err;
          return handleStartupFailure(ctx, run, { definite: false, providerFailure: null, message: (err as Error).message });
        }
        await fenced(ctx, run).update({
          where: { id: run.id },
          data: {
            phase: "bootstrapping",
            runnerInstanceId: `ri-${crypto.randomUUID().slice(0, 8)}`,
            sessionId: run.sessionId ?? `s-${crypto.randomUUID().slice(0, 8)}`,
          },
        });
        await appendEvent(ctx.db, run.id, "phase", ctx.identity.bootId, { phase: "bootstrapping", leaseId: lease.id });
        continue;
      }
      case "bootstrapping": {
        const lease = await activeLease(ctx, run);
        if (!lease?.providerLeaseId) {
          await fenced(ctx, run).update({ where: { id: run.id }, data: { phase: "acquiring" } });
          continue;
        }
        const outcome = await bootstrap(ctx, run, lease);
        if (outcome !== "opened") return;
        continue;
      }
      case "session_open": {
        const lease = await activeLease(ctx, run);
        if (run.turnsDone >= run.turnsPlanned) {
          await fenced(ctx, run).update({ where: { id: run.id }, data: { phase: "finishing" } });
          continue;
        }
        if (!lease?.providerLeaseId) {
          // Between per-turn sandboxes: the next turn gets a fresh one.
          await fenced(ctx, run).update({ where: { id: run.id }, data: { phase: "acquiring" } });
          continue;
        }
        const done = await doTurn(ctx, run, lease);
        if (!done) return;
        continue;
      }
      case "finishing":
        await finishRunSucceeded(ctx, run);
        return;
      case "done":
        return;
      default:
        throw new Error(`run ${run.id} has an unknown phase ${run.phase}`);
    }
  }
}

export async function activeLease(ctx: ControllerContext, run: Run): Promise<EnvironmentLease | null> {
  return ctx.db.environmentLease.findFirst({ where: { runId: run.id, status: "active" }, orderBy: { createdAt: "desc" } });
}

/** Runner start and session.open on the run's sandbox. */
async function bootstrap(ctx: ControllerContext, run: Run, lease: EnvironmentLease): Promise<"opened" | "failed"> {
  const sandboxId = lease.providerLeaseId!;
  const runnerInstanceId = run.runnerInstanceId ?? `ri-${crypto.randomUUID().slice(0, 8)}`;
  const sessionId = run.sessionId ?? `s-${crypto.randomUUID().slice(0, 8)}`;
  try {
    const state = await ctx.runner.start(sandboxId, { runId: run.id, runnerInstanceId, sessionId, agentCommand: run.agentCommand, demoSleepMs: run.demoSleepMs });
    writeRunnerRoot(ctx.config.home, ctx.config.instanceId, {
      runId: run.id,
      runnerInstanceId,
      sessionId,
      sandboxId,
      startedAt: new Date().toISOString(),
    });
    await whileCurrent(ctx, run, async (tx) => {
      await tx.run.update({
        where: { id: run.id },
        data: {
          status: "running",
          startedAt: run.startedAt ?? new Date(),
          lastRunnerState: json(state),
          lastRunnerStateAt: new Date(),
          // From here a restart's claim names this sandbox (the binding the runner now has) and
          // the directory the runner itself reports working in (§2.1), never an assumed one.
          checkpoint: json({ turn: run.turnsDone, sessionId, leaseId: lease.id, providerLeaseId: sandboxId, remoteCwd: state.workDir ?? null, at: new Date().toISOString() }),
        },
      });
      await tx.environmentLease.update({ where: { id: lease.id }, data: { remoteCwd: state.workDir ?? null } });
    });
    await appendEvent(ctx.db, run.id, "runner_started", ctx.identity.bootId, { sandboxId, runnerInstanceId, sessionId });
  } catch (err) {
    if (waitsForProvider(err)) throw err;
    if (isNodeMissing(err)) {
      // The snapshot, as the provider names it, goes on the proof: it is what the board must change.
      const snapshot = (await ctx.provider.getById(sandboxId).catch(() => null))?.snapshot ?? null;
      const message = `the sandbox's snapshot ${snapshot ?? "(not named by the provider)"} has no node on its PATH, so the runner cannot run: ${(err as Error).message}`;
      await handleStartupFailure(ctx, run, { definite: false, providerFailure: null, message, runnerMissing: { program: "node", snapshot } });
      return "failed";
    }
    if (isBindConflict(err)) {
      await handleStartupFailure(ctx, run, { definite: false, providerFailure: null, message: (err as Error).message, bindConflict: true });
      return "failed";
    }
    if (ProviderError.is(err)) {
      await handleStartupFailure(ctx, run, { definite: false, providerFailure: null, message: err.message });
      return "failed";
    }
    throw err;
  }
  crashPoint(ctx, "after_runner_start", { runId: run.id });
  if (ctx.drain.signal.aborted) {
    await suspendRun(ctx, await rereadOwnRun(ctx, run));
    return "failed";
  }

  const opened = await ctx.runner.sessionOpen(sandboxId, { timeoutMs: ctx.config.sessionOpenTimeoutMs }).catch((err: unknown) => {
    if (ProviderError.is(err) && !waitsForProvider(err)) return { ok: false as const, definite: false as const, reason: "error" as const, message: err.message };
    throw err;
  });
  if (!opened.ok) {
    // Fenced on the epoch this controller claimed: a controller stalled past the silence
    // window during session.open finds the run taken over and records nothing (docs/rules.md §2.10).
    await handleStartupFailure(ctx, await rereadOwnRun(ctx, run), {
      definite: opened.definite,
      providerFailure: opened.definite ? opened.providerFailure : null,
      message: opened.message,
    });
    return "failed";
  }
  await fenced(ctx, run).update({
    where: { id: run.id },
    data: {
      phase: "session_open",
      recoveryState: null,
      lastRunnerState: json(opened.state),
      lastRunnerStateAt: new Date(),
      // What a restart's claim will name: the lease this session is bound to.
      // The directory is the runner's own report at session.open (§2.1).
      checkpoint: json({ turn: run.turnsDone, sessionId, leaseId: lease.id, providerLeaseId: sandboxId, remoteCwd: opened.state.workDir ?? null, at: new Date().toISOString() }),
    },
  });
  await appendEvent(ctx.db, run.id, "session.open", ctx.identity.bootId, { sandboxId, sessionId });
  crashPoint(ctx, "after_session_open", { runId: run.id });
  return "opened";
}

/** One agent turn; a per-turn run then gives its sandbox back. */
async function doTurn(ctx: ControllerContext, run: Run, lease: EnvironmentLease): Promise<boolean> {
  const seq = run.turnsDone + 1;
  if (!(await sleep(ctx.config.turnMs, ctx.drain.signal))) {
    await suspendRun(ctx, run);
    return false;
  }
  // A provider error during a turn is not a startup failure (§2.3) and the shell does not
  // retry it: it throws, the attempt is counted, and recovery reattaches with the runner's
  // processed commands as evidence (the runner answers a processed seq from its record,
  // never running it twice).
  // The turn has a budget (the runner kills the agent past it) and a drain waits for it at
  // most its own bound (docs/operations.md, "Stopping").
  const bound = drainDeadline(ctx.drain.signal, ctx.config.drainTimeoutMs);
  let turn: TurnResult;
  try {
    turn = await ctx.runner.turn(lease.providerLeaseId!, seq, {
      prompt: `turn ${seq} of ${run.turnsPlanned} for task ${run.taskId}`,
      budgetMs: turnBudgetMs(ctx, run),
      deadlineMarginMs: ctx.config.turnDeadlineMarginMs,
      signal: bound.signal,
    });
  } catch (err) {
    // Suspended mid-turn: the runner goes on and records the turn; recovery reattaches with
    // that record as evidence and never runs the seq again.
    if (bound.signal.aborted) {
      await suspendRun(ctx, run);
      return false;
    }
    if (!TurnDeadlineError.is(err)) throw err;
    await endTurnPastDeadline(ctx, run, lease, err);
    return false;
  } finally {
    bound.dispose();
  }
  // Chaos: the turn ran in the sandbox, its checkpoint is not committed yet (docs/rules.md, "Turns").
  crashPoint(ctx, "after_turn_executed", { runId: run.id });
  const { state, command } = turn;
  // The turn log: the runner's durable record of what the agent command did.
  const log = { turn: seq, exitCode: command.exitCode ?? null, durationMs: command.durationMs ?? null, outputTail: command.outputTail ?? "" };
  const evidence = turnEvidence(seq, command);
  const judgement = judgeTurnResult(evidence);
  if (judgement.verdict === "turn_failed") {
    // A failed turn is a proof (docs/rules.md, "Turns"); the run rests where its verdict says. The
    // proof and its event land with the fenced ending, or not at all (§2.10).
    await fenced(ctx, run).update({ where: { id: run.id }, data: { lastRunnerState: json(state), lastRunnerStateAt: new Date() } });
    await finishRunFailed(ctx, run, judgement, turnFailureDetail(seq, command), {
      landing: {
        proofs: [{ verdict: judgement, evidence, links: { leaseId: lease.id, sandboxId: lease.providerLeaseId } }],
        events: [{ type: "turn_failed", data: { ...log, checks: judgement.checks } }],
      },
    });
    return false;
  }
  const checkpoint = {
    turn: seq,
    sessionId: run.sessionId,
    leaseId: lease.id,
    providerLeaseId: lease.providerLeaseId,
    // The directory recorded from the runner at its session.open, carried on unchanged.
    remoteCwd: (run.checkpoint as { remoteCwd?: string | null } | null)?.remoteCwd ?? null,
    at: new Date().toISOString(),
  };
  // A per-turn run's next turn runs in a fresh sandbox with this session staged for
  // attachment: this one is taken out of service in the transaction that records the turn
  // (§2.10), so a controller that took the run over meanwhile never has its runner stopped or
  // its sandbox destroyed, and a kill before the teardown leaves a lease the sweep finishes.
  const givesBack = run.sandboxMode === "per_turn" && seq < run.turnsPlanned;
  const marked = await whileCurrent(ctx, run, async (tx) => {
    await tx.run.update({
      where: { id: run.id },
      // A turn done is the run going on: its 429 waits so far are behind it (§2.8, the bound on them).
      data: { turnsDone: seq, checkpoint: json(checkpoint), lastRunnerState: json(state), lastRunnerStateAt: new Date(), rateLimitWaits: 0, rateLimitedSince: null },
    });
    await appendEvent(tx, run.id, "turn_done", ctx.identity.bootId, log);
    if (!givesBack) return [];
    await appendEvent(tx, run.id, "turn_sandbox_released", ctx.identity.bootId, { turn: seq, leaseId: lease.id });
    return markRunLeases(tx, run.id);
  });
  crashPoint(ctx, "after_turn", { runId: run.id });
  if (givesBack) await takeDownLeases(ctx, run.id, marked);
  return true;
}

/**
 * Graceful drain (docs/rules.md §4): the runner is suspended where it stands, the run waits
 * for a controller to reattach it, and no retry run is created.
 */
export async function suspendRun(ctx: ControllerContext, run: Run): Promise<void> {
  // A controller that lost the run must not suspend the new executor's runner (§2.10).
  await assertCurrent(ctx, run);
  const lease = await activeLease(ctx, run);
  let runnerState = null;
  if (lease?.providerLeaseId && run.phase === "session_open") {
    runnerState = await ctx.runner.suspend(lease.providerLeaseId).catch(() => null);
  } else if (lease?.providerLeaseId && run.phase === "bootstrapping") {
    // A runner that has no session yet has nothing to keep: it is stopped, and the next
    // controller restarts the bootstrap from its (never connected) state.
    runnerState = await ctx.runner.stop(lease.providerLeaseId).catch(() => null);
  }
  const nothingStarted = !lease || run.phase === null || run.phase === "acquiring";
  await fenced(ctx, run).update({
    where: { id: run.id },
    data: {
      status: "suspended",
      recoveryState: "awaiting_runner_reattach",
      recoveryMode: nothingStarted ? "bootstrap_retry" : run.turnsDone > 0 ? "exact_checkpoint_resume" : null,
      ...(runnerState ? { lastRunnerState: json(runnerState), lastRunnerStateAt: new Date() } : {}),
    },
  });
  await appendEvent(ctx.db, run.id, "suspended", ctx.identity.bootId, {
    phase: run.phase,
    providerLeaseId: lease?.providerLeaseId ?? null,
    remoteCwd: lease?.remoteCwd ?? null,
    runnerLifecycle: runnerState?.lifecycle ?? null,
  });
}

function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve(true);
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
