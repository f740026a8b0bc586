import type { Db } from "../../db/client";
import type { WaveObservation, WaveState } from "../step";
import type { WaveContext } from "./context";
import { K5_SILENCE_MS, type WaveControllers } from "./controllers";
import type { KillEffects } from "./faults-at-kill";

/**
 * What the wave's shell reads for `nextWaveStep` (server/waves/step.ts): a poll of the tasks and
 * the target controller, and the waits a K5 and a K2 need (docs/rules.md §5).
 */

type Poll = Extract<WaveObservation, { kind: "poll" }>;

export async function observePoll(ctx: WaveContext, state: WaveState, controllers: WaveControllers, effects: KillEffects): Promise<Poll> {
  const atMs = Date.now() - ctx.t0;
  const target = state.controller;
  const exit = target ? controllers.exitOf(target.pid, atMs) : null;
  const exited = exit ? { ...exit, crash: exit.crash ? { ...exit.crash, runId: exit.crash.runId ?? (exit.crash.leaseId ? await runOfLease(ctx.db, exit.crash.leaseId) : null) } : null } : null;
  const killLeft = state.next < state.kills.length;
  return {
    kind: "poll",
    atMs,
    tasks: await taskViews(ctx.db, ctx.id),
    exited,
    inFlightRunId: killLeft && target && !exited ? ((await runInFlight(ctx.db, ctx.id, target.bootId))?.id ?? null) : null,
    archiveReady: killLeft ? await effects.readyToLand() : true,
    cleanupDone: await cleanupDone(ctx.db, ctx.instanceId),
  };
}

/** Each submitted task's latest run. */
async function taskViews(db: Db, id: string) {
  const runs = await db.run.findMany({ where: { waveId: id }, orderBy: { createdAt: "asc" } });
  const byTask = new Map<string, (typeof runs)[number]>();
  for (const r of runs) byTask.set(r.taskId, r); // latest wins
  return [...byTask.entries()].map(([taskId, r]) => ({
    key: taskId.slice(id.length + 1),
    runId: r.id,
    status: r.status,
    outcome: r.outcome,
    failureCode: r.failureCode,
    canRetry: r.canRetry,
    turnsDone: r.turnsDone,
    turnsPlanned: r.turnsPlanned,
    executorBootId: r.executorBootId,
  }));
}

/**
 * A kill lands on work in flight on the controller it targets, never on an idle one: a run
 * in session, on the sandbox it holds (a per-turn run between turns, its sandbox given
 * back, has no session to interrupt).
 */
async function runInFlight(db: Db, id: string, bootId: string | null) {
  return bootId
    ? await db.run.findFirst({
        where: {
          waveId: id,
          executorBootId: bootId,
          status: "running",
          phase: "session_open",
          OR: [{ target: "local" }, { leases: { some: { status: "active" } } }],
        },
        select: { id: true },
      })
    : null;
}

async function cleanupDone(db: Db, instanceId: string): Promise<boolean> {
  const held = await db.environmentLease.count({ where: { instanceId, status: { in: ["active", "pending_cleanup"] } } });
  const due = await db.sandboxCreationIntent.count({ where: { instanceId, status: "pending", NOT: { runId: { startsWith: "decoy-" } } } });
  return held === 0 && due === 0;
}

async function runOfLease(db: Db, leaseId: string): Promise<string | null> {
  return (await db.environmentLease.findUnique({ where: { id: leaseId }, select: { runId: true } }))?.runId ?? null;
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** K2: whether the drain suspended the run it caught, since the kill fired. */
export async function checkDrain(ctx: WaveContext, kill: number, runId: string, sinceMs: number): Promise<WaveObservation> {
  const suspended = await ctx.db.runEvent.count({ where: { runId, type: "suspended", at: { gte: new Date(ctx.t0 + sinceMs) } } });
  return { kind: "drained", kill, suspended: suspended > 0 };
}

/** K5: the other host took seconds to come up, and the run chosen before may have ended since: a run in session now (waiting a little for one). */
export async function findRunInFlight(ctx: WaveContext, kill: number, bootId: string | null): Promise<WaveObservation> {
  let runId: string | null = null;
  for (const until = Date.now() + 20_000; runId === null && Date.now() < until; ) {
    runId = (await runInFlight(ctx.db, ctx.id, bootId))?.id ?? null;
    if (runId === null) await pause(100);
  }
  return { kind: "run_in_flight", kill, runId };
}

/**
 * K5, once the target is stopped: past the silence window, a live controller's recovery judges
 * the stalled executor and takes the run over — the other host's, or one a wave left running
 * (an earlier K5's woken one) — and says how it judged it once it starts (still stalled).
 */
export async function watchTakeover(ctx: WaveContext, kill: number, runId: string, stalledBootId: string | null, sinceMs?: number): Promise<WaveObservation> {
  const { db, t0 } = ctx;
  const stoppedAt = Date.now();
  const lastSeen = stalledBootId ? ((await db.controllerProcess.findUnique({ where: { bootId: stalledBootId }, select: { lastSeenAt: true } }))?.lastSeenAt ?? null) : null;
  const giveUpAt = stoppedAt + K5_SILENCE_MS * 4 + 15_000;
  let takenBy: string | null = null;
  let ended: string | null = null;
  while (Date.now() < giveUpAt) {
    const run = await db.run.findUnique({ where: { id: runId }, select: { executorBootId: true, status: true } });
    if (run?.executorBootId && run.executorBootId !== stalledBootId) {
      takenBy = run.executorBootId;
      break;
    }
    if (run && (run.status === "succeeded" || run.status === "failed")) {
      // A KD's next build may have taken it over and finished it before the watch began (its
      // forecast came first): its recovery_started event since the kill says who.
      const taker =
        sinceMs === undefined
          ? null
          : await db.runEvent.findFirst({ where: { runId, type: "recovery_started", bootId: { not: stalledBootId ?? "" }, at: { gte: new Date(t0 + sinceMs) } }, orderBy: { id: "asc" }, select: { bootId: true } });
      if (taker?.bootId) takenBy = taker.bootId;
      else ended = run.status;
      break;
    }
    await pause(100);
  }
  const atMs = Date.now() - t0;
  let reason: string | null = null;
  while (takenBy && reason === null && Date.now() < giveUpAt) {
    const started = await db.runEvent.findFirst({ where: { runId, type: "recovery_started", bootId: takenBy }, orderBy: { id: "desc" }, select: { data: true } });
    const was = (started?.data as { executorWas?: unknown } | null)?.executorWas;
    if (typeof was === "string") reason = was;
    else await pause(100);
  }
  return {
    kind: "takeover",
    kill,
    atMs,
    takenBy,
    reason,
    ended,
    stalledMs: Date.now() - stoppedAt,
    silentForMs: lastSeen ? Date.now() - lastSeen.getTime() : null,
  };
}
