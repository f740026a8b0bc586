import { databaseNow } from "../db/clock";
import crypto from "node:crypto";
import type { EnvironmentLease, Run } from "../db/client";
import { settleFloorMs } from "../lib/settle";
import { buildLabels, creationName } from "../providers/labels";
import type { ControllerContext } from "./context";
import { waitsForProvider } from "./outage";
import { evidenceIdentity } from "./context";
import { crashPoint } from "./crash";
import { assertCurrentIn, type RunFence } from "./fence";
import { appendEvent, json, recordProof } from "./records";
import { judgeOwnership } from "./ownership";
import type { SandboxView } from "../providers/types";
import { isTakeableFoundSandbox, sandboxIdlePolicy } from "../engine";
import { turnBudgetMs } from "./turn-timeout";

export class AcquireError extends Error {
  override name = "AcquireError";
}

/**
 * Acquires a sandbox for a run with a durable creation intent (docs/rules.md §2.5): the
 * intent is committed before the provider is asked, so a crash anywhere after leaves a
 * record the sweep can reclaim the sandbox from. The intent and the lease are written only
 * while `run`'s executor epoch is current (§2.10): a controller that wakes after a takeover
 * creates nothing, and a sandbox it created before is left to the sweep (its intent stays
 * pending).
 */
export async function acquireSandbox(ctx: ControllerContext, run: Run, turn: number | null): Promise<EnvironmentLease> {
  const { config } = ctx;
  const operationId = crypto.randomUUID();
  const name = creationName(config.sandboxPrefix, operationId);
  const labels = buildLabels({ instanceId: run.instanceId, companyId: run.companyId, operationId, runId: run.id });
  // The database's clock: the sweep that judges the settle deadline may run on another host.
  const createdAt = await databaseNow(ctx.db);
  await ctx.db.$transaction(async (tx) => {
    await assertCurrentIn(tx, run);
    await tx.sandboxCreationIntent.create({
      data: {
        id: operationId,
        instanceId: run.instanceId,
        companyId: run.companyId,
        runId: run.id,
        creationName: name,
        labels: json({ instance: run.instanceId, company: run.companyId, operation: operationId }),
        creatorBootId: ctx.identity.bootId,
        creator: json(evidenceIdentity(ctx.identity)),
        createdAt,
        // Never before the create could still be answered, plus a margin (§2.5).
        settleDeadline: new Date(createdAt.getTime() + Math.max(config.settleMs, settleFloorMs(config.createTimeoutMs))),
        nextAttemptAt: new Date(createdAt.getTime() + config.intentWaitMs),
      },
    });
  });
  /** The intent's sandbox will be nobody's lease: the sweep looks at it at once. */
  const dueNow = async () => ctx.db.sandboxCreationIntent.updateMany({ where: { id: operationId, status: "pending" }, data: { nextAttemptAt: await databaseNow(ctx.db) } });
  await appendEvent(ctx.db, run.id, "intent_committed", ctx.identity.bootId, { operationId, creationName: name, turn });
  crashPoint(ctx, "after_intent_commit", { runId: run.id });

  // The sandbox's own idle policy: an auto-stop no turn of this run can reach, an auto-delete
  // that leaves recovery time to find a stopped sandbox (docs/rules.md §4, "The sandbox idle policy"), recorded on the lease.
  const idle = sandboxIdlePolicy({
    turnBudgetMs: turnBudgetMs(ctx, run),
    turnDeadlineMarginMs: config.turnDeadlineMarginMs,
    autoStopMinutes: config.sandboxAutoStopMinutes,
    autoDeleteMinutes: config.sandboxAutoDeleteMinutes,
  });
  let sandbox: SandboxView;
  try {
    sandbox = await ctx.provider.create(
      {
        name,
        labels,
        autoStopInterval: idle.autoStopMinutes,
        autoDeleteInterval: idle.autoDeleteMinutes,
        ...(config.sandboxSnapshot ? { snapshot: config.sandboxSnapshot } : {}),
      },
      { signal: AbortSignal.timeout(config.createTimeoutMs) },
    );
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    await appendEvent(ctx.db, run.id, "create_failed", ctx.identity.bootId, { operationId, error: message });
    // No answer is not "not created": the sandbox is looked up by its exact name before anything else.
    const found = waitsForProvider(err) ? await foundByName(ctx, run, operationId, name) : null;
    if (!found) {
      // This creator has stopped waiting: the intent is due now, and the sweep inspects it
      // (a create the provider still materialises later is reclaimed, not leaked).
      await dueNow();
      // An unavailable provider is no startup failure of the run's: the engine judges it (§2.8).
      if (waitsForProvider(err)) throw err;
      throw new AcquireError(`sandbox create failed: ${message}`);
    }
    sandbox = found;
  }
  crashPoint(ctx, "after_create", { runId: run.id });

  const commitLease = () => ctx.db.$transaction(async (tx) => {
    await assertCurrentIn(tx, run);
    const { count } = await tx.sandboxCreationIntent.updateMany({
      where: { id: operationId, status: "pending" },
      data: { status: "committed", resolvedAt: new Date() },
    });
    if (count !== 1) return null;
    return tx.environmentLease.create({
      data: {
        runId: run.id,
        instanceId: run.instanceId,
        companyId: run.companyId,
        intentId: operationId,
        provider: ctx.providerTarget,
        providerLeaseId: sandbox.id,
        sandboxName: name,
        // Unknown until the sandbox's runner reports where it works (recorded at its start).
        remoteCwd: null,
        turn,
        acquisitionOutcome: "created",
        status: "active",
        autoStopMinutes: idle.autoStopMinutes,
        autoDeleteMinutes: idle.autoDeleteMinutes,
      },
    });
  });
  let lease;
  try {
    lease = await commitLease();
  } catch (err) {
    // Taken over while the provider created, or the commit failed for any other reason (a
    // database error, a constraint): the paid sandbox is nobody's lease, so its intent is due
    // now and the sweep reclaims it, instead of waiting out the intent's whole wait. A due-now
    // write that fails too leaves the intent to its wait; the commit's error is the one thrown.
    await dueNow().catch((dueErr: unknown) => ctx.log.warn({ runId: run.id, operationId, err: String(dueErr) }, "creation intent could not be made due"));
    throw err;
  }
  if (!lease) throw new AcquireError(`creation intent ${operationId} was resolved by a sweep before its lease committed`);
  await appendEvent(ctx.db, run.id, "lease_acquired", ctx.identity.bootId, {
    leaseId: lease.id,
    sandboxId: sandbox.id,
    sandboxName: name,
    acquisitionOutcome: "created",
    turn,
    autoStopMinutes: idle.autoStopMinutes,
    autoDeleteMinutes: idle.autoDeleteMinutes,
  });
  return lease;
}

/**
 * The sandbox a create that got no answer made after all, found by its exact creation name,
 * taken when the engine proves it this intent's (`sandbox_ownership`, stored) and it is up or
 * on its way up; null otherwise (and when the provider cannot be asked: the sweep looks later).
 */
async function foundByName(ctx: ControllerContext, run: Run, operationId: string, name: string): Promise<SandboxView | null> {
  const found = await ctx.provider.getByName(name).catch(() => null);
  if (!found) return null;
  const { evidence, verdict } = await judgeOwnership(ctx.db, ctx.config.instanceId, found, { type: "intent", id: operationId });
  await recordProof(ctx.db, verdict, evidence, ctx.identity.bootId, { runId: run.id, intentId: operationId, sandboxId: found.id });
  const usable = isTakeableFoundSandbox(verdict.verdict, found.state);
  await appendEvent(ctx.db, run.id, "create_found_by_name", ctx.identity.bootId, { operationId, sandboxId: found.id, state: found.state, ownership: verdict.verdict, taken: usable });
  return usable ? found : null;
}

/**
 * A warm sandbox taken up again after a restart: a new lease on the same sandbox with
 * acquisition outcome `resumed`; the interrupted lease is released (not torn down).
 */
export async function resumeLease(ctx: ControllerContext, run: RunFence, lease: EnvironmentLease): Promise<EnvironmentLease> {
  return ctx.db.$transaction(async (tx) => {
    await assertCurrentIn(tx, run);
    await tx.environmentLease.update({ where: { id: lease.id }, data: { status: "released", cleanupStatus: "superseded_by_resume", endedAt: new Date() } });
    return tx.environmentLease.create({
      data: {
        runId: lease.runId,
        instanceId: lease.instanceId,
        companyId: lease.companyId,
        provider: lease.provider,
        providerLeaseId: lease.providerLeaseId,
        sandboxName: lease.sandboxName,
        remoteCwd: lease.remoteCwd,
        turn: lease.turn,
        acquisitionOutcome: "resumed",
        status: "active",
        // The same sandbox: created with the same policy.
        autoStopMinutes: lease.autoStopMinutes,
        autoDeleteMinutes: lease.autoDeleteMinutes,
      },
    });
  });
}
