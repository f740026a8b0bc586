import { Prisma, type ControllerProcess, type Db, type RestartKind, type Run } from "../../db/client";
import { databaseNow } from "../../db/clock";
import { EXECUTING_RUN_STATUSES, isSilent } from "../../engine";
import type { ControllerContext } from "../context";
import { judgeExit } from "../observe";
import { appendEvent } from "../records";

/**
 * Which interrupted runs this controller takes over (docs/rules.md §2.8, §2.10): a run whose
 * executor is gone, claimed at epoch + 1; and a run this controller executes but does not
 * track. What becomes of a claimed run is `recoverRun`'s (recovery/recover.ts).
 */

const ACTIVE = EXECUTING_RUN_STATUSES;

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

