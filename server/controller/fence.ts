import type { Prisma, Run } from "../db/client";
import type { ControllerContext } from "./context";

/**
 * The executor epoch (docs/rules.md §2.10): every takeover of a run increments it, and every
 * write a controller makes to a run it executes is conditional on the epoch it claimed. A
 * write that matches nothing means the run was taken over: the writer stops working on it
 * and touches none of its leases.
 */
export type RunFence = Pick<Run, "id" | "executorEpoch">;

export class RunLost extends Error {
  override name = "RunLost";
  constructor(
    readonly runId: string,
    readonly epoch: number,
  ) {
    super(`run ${runId}: executor epoch ${epoch} is no longer current (another controller took the run over, or a person cancelled it)`);
  }
}

export function isRunLost(err: unknown): err is RunLost {
  return err instanceof RunLost;
}

/** A run write fenced by the epoch `run` was claimed at. */
export function fenced(ctx: ControllerContext, run: RunFence) {
  return {
    async update(args: { where: { id: string }; data: Prisma.RunUpdateManyMutationInput }): Promise<void> {
      const { count } = await ctx.db.run.updateMany({ where: { id: args.where.id, executorEpoch: run.executorEpoch }, data: args.data });
      if (count === 0) throw new RunLost(run.id, run.executorEpoch);
    },
  };
}

/** Fails with RunLost when the run's epoch moved on: checked before acting on its sandboxes. */
export async function assertCurrent(ctx: ControllerContext, run: RunFence): Promise<void> {
  await fenced(ctx, run).update({ where: { id: run.id }, data: { heartbeatAt: new Date() } });
}

/**
 * The same check inside a transaction: the row lock it takes holds the epoch until the
 * transaction ends, so the intent or lease written beside it belongs to the current executor
 * or is rolled back with it (RunLost).
 */
export async function assertCurrentIn(tx: Prisma.TransactionClient, run: RunFence): Promise<void> {
  const { count } = await tx.run.updateMany({ where: { id: run.id, executorEpoch: run.executorEpoch }, data: { heartbeatAt: new Date() } });
  if (count === 0) throw new RunLost(run.id, run.executorEpoch);
}

/**
 * Work that must land only while `run`'s epoch is current: one transaction that proves the
 * epoch first (its row lock holds it to the commit), then writes. A controller that lost the
 * run writes nothing of it — no proof, no event, no lease change (RunLost).
 */
export async function whileCurrent<T>(ctx: ControllerContext, run: RunFence, work: (tx: Prisma.TransactionClient) => Promise<T>): Promise<T> {
  return ctx.db.$transaction(async (tx) => {
    await assertCurrentIn(tx, run);
    return work(tx);
  });
}

/**
 * A run read again during its execution, for its current phase and counters — never for its
 * fence: the epoch stays the one this controller claimed (a fresh read would carry whoever
 * holds the run now). RunLost when the run moved on.
 */
export async function rereadOwnRun(ctx: ControllerContext, run: RunFence): Promise<Run> {
  const fresh = await ctx.db.run.findUniqueOrThrow({ where: { id: run.id } });
  if (fresh.executorEpoch !== run.executorEpoch) throw new RunLost(run.id, run.executorEpoch);
  return fresh;
}
