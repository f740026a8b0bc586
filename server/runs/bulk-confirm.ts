import { writeAudit, type Actor } from "../audit/write";
import { Prisma, type Db } from "../db/client";
import { assertNever, judgeBulkConfirmation, type BulkConfirmation, type BulkPlanKind } from "../engine";
import { AppError, type AppErrorCode } from "../errors";
import type { CancelOutcome } from "../services";
import type { BulkResult } from "../shared/bulk";
import type { CompanyScope } from "../shared/roles";
import { bulkConfirmInput, readBulkPlan, type BulkConfirmInput, type BulkPlan } from "./bulk-plan";
import { singleCompany } from "./bulk-preview";
import { isUniqueViolation, retryInTransaction } from "./retry";

/**
 * The confirmation of a bulk plan (docs/rules.md §2.11). Only the runs the preview admitted are
 * carried out, each in a transaction that locks its plan item: an item already done answers
 * its stored result, otherwise the engine judges the run again now and the run is retried
 * (or cancelled) in that transaction. However many confirmations arrive at once — two tabs,
 * a double click, two servers — each run gets at most one successor from the plan, and every
 * confirmation answers the same per-run results. The confirmation that finishes the plan
 * writes its one audit entry, with every run id.
 */

type Tx = Prisma.TransactionClient;

interface ItemOutcome {
  result: BulkResult;
  resultReason: string | null;
  resultDetail: string | null;
  successorId: string | null;
  leasesQueued: string[];
}

export interface BulkConfirmOutcome {
  plan: BulkPlan;
  /** The retried runs' leases handed to cleanup by this confirmation (services.tearDownRetriedLeases takes them). */
  leasesQueued: string[];
}

/**
 * A cancel holds its item's transaction (one connection) while cancelRun takes others and the
 * provider answers: two at a time in this process, so concurrent confirmations never hold
 * every connection of the pool while each waits for one more.
 */
const cancelSlots = slots(2);

function slots(n: number): <T>(fn: () => Promise<T>) => Promise<T> {
  let free = n;
  const waiting: Array<() => void> = [];
  return async (fn) => {
    if (free > 0) free--;
    else await new Promise<void>((resolve) => waiting.push(resolve));
    try {
      return await fn();
    } finally {
      const next = waiting.shift();
      if (next) next();
      else free++;
    }
  };
}

/** A unique index lost to a racing writer aborts the item's transaction; the item is judged again. */
const ITEM_ATTEMPTS = 3;

/** Long enough for one run's Retry while other confirmations hold the pool's connections. */
const ITEM_TX = { maxWait: 30_000, timeout: 30_000 } as const;
/** A cancel's item waits for its sandbox's teardown too. */
const CANCEL_ITEM_TX = { maxWait: 30_000, timeout: 180_000 } as const;

/** One run's Cancel (services.cancelRun, under the confirming person's scope), for a cancel plan. */
export type CancelOne = (runId: string, options: { reason?: string; planId: string }) => Promise<CancelOutcome>;

export async function confirmBulkPlan(db: Db, instanceId: string, scope: CompanyScope, actor: Actor, raw: BulkConfirmInput, opts: { cancel?: CancelOne; now?: Date } = {}): Promise<BulkConfirmOutcome> {
  const now = opts.now ?? new Date();
  const input = bulkConfirmInput.parse(raw);
  const plan = await db.bulkPlan.findFirst({ where: { id: input.planId, instanceId } });
  if (!plan) throw new AppError("NOT_FOUND", `no bulk plan ${input.planId}: preview the set first`);
  const action = `run.bulk_${plan.kind}`;
  const companies = await db.$queryRaw<Array<{ company_id: string }>>`SELECT DISTINCT r.company_id FROM bulk_plan_items i JOIN runs r ON r.id = i.run_id WHERE i.plan_id = ${plan.id}::uuid`;
  const judgement = judgeBulkConfirmation({ plan, word: input.confirm, planCompanies: companies.map((c) => c.company_id), scope, now });
  if (judgement.verdict === "refused") {
    await writeAudit(db, actor, { action, targetType: "bulk_plan", targetId: plan.id, outcome: "refused", detail: { reason: judgement.reason, refusal: judgement.refusal } });
    throw new AppError(refusalCode(judgement.reason), judgement.refusal);
  }
  if (judgement.first) {
    await db.bulkPlan.updateMany({ where: { id: plan.id, confirmedAt: null }, data: { confirmedAt: new Date(), confirmedBy: actor.id } });
  }

  const leasesQueued: string[] = [];
  let carried = 0;
  /** Carries the item out in `tx`; what it handed to cleanup counts only once `tx` committed. */
  const carry = async (tx: Tx, runId: string): Promise<string[]> => {
    const outcome = await carryOut(tx, plan, runId, actor, scope, opts.cancel);
    await tx.bulkPlanItem.update({
      where: { planId_runId: { planId: plan.id, runId } },
      data: { result: outcome.result, resultReason: outcome.resultReason, resultDetail: outcome.resultDetail, successorId: outcome.successorId, doneAt: new Date() },
    });
    return outcome.leasesQueued;
  };
  const committed = (leases: string[] | null) => {
    if (!leases) return;
    carried++;
    leasesQueued.push(...leases);
  };

  // A cancel's item transaction waits for the provider: a few at a time in this process, each given longer.
  const guard = plan.kind === "cancel" ? cancelSlots : <T,>(fn: () => Promise<T>) => fn();
  const itemTx = plan.kind === "cancel" ? CANCEL_ITEM_TX : ITEM_TX;

  // First the items nobody holds, so that concurrent confirmations share the work…
  for (;;) {
    const took = await attempt(() =>
      guard(() => db.$transaction(async (tx) => {
        const [item] = await tx.$queryRaw<Array<{ run_id: string }>>`SELECT run_id FROM bulk_plan_items WHERE plan_id = ${plan.id}::uuid AND admitted AND result IS NULL
          ORDER BY position LIMIT 1 FOR UPDATE SKIP LOCKED`;
        return item ? await carry(tx, item.run_id) : null;
      }, itemTx)),
    );
    if (!took) break;
    committed(took);
  }
  // …then each item another confirmation holds: its lock is waited for, and its stored result
  // read; an item whose holder rolled back (it crashed, its connection dropped) is done here.
  const held = await db.bulkPlanItem.findMany({ where: { planId: plan.id, admitted: true, result: null }, select: { runId: true }, orderBy: { position: "asc" } });
  for (const { runId } of held) {
    committed(
      await attempt(() =>
        guard(() => db.$transaction(async (tx) => {
          const [item] = await tx.$queryRaw<Array<{ result: string | null }>>`SELECT result FROM bulk_plan_items WHERE plan_id = ${plan.id}::uuid AND run_id = ${runId}::uuid FOR UPDATE`;
          return item && item.result === null ? await carry(tx, runId) : null;
        }, itemTx)),
      ),
    );
  }

  // Every admitted item is done: the one confirmation that marks the plan finished writes its entry.
  const finished = await db.$transaction(async (tx) => {
    const marked = await tx.$executeRaw`UPDATE bulk_plans SET finished_at = now() WHERE id = ${plan.id}::uuid AND finished_at IS NULL
      AND NOT EXISTS (SELECT 1 FROM bulk_plan_items WHERE plan_id = ${plan.id}::uuid AND admitted AND result IS NULL)`;
    if (marked === 0) return null;
    const view = await readBulkPlan(tx, instanceId, plan.id);
    await writeAudit(tx, actor, {
      action,
      targetType: "bulk_plan",
      targetId: plan.id,
      companyId: singleCompany(view.items),
      input: { planId: plan.id },
      outcome: "ok",
      detail: {
        counts: view.counts,
        runs: view.items.map((i) => ({ runId: i.runId, admitted: i.admitted, result: i.admitted ? i.result : "refused_at_preview", reason: i.admitted ? i.resultReason : i.reason, successorId: i.successorId })),
      },
    });
    return view;
  });
  if (finished) return { plan: finished, leasesQueued };
  // A repeat (or a confirmation that shared the work with the one that finished): audited as such, without the runs again.
  await writeAudit(db, actor, { action: "run.bulk_confirm_repeat", targetType: "bulk_plan", targetId: plan.id, outcome: "ok", detail: { kind: plan.kind, carriedOut: carried } });
  return { plan: await readBulkPlan(db, instanceId, plan.id), leasesQueued };
}

/** One admitted run, judged again now and carried out under its item's lock. */
async function carryOut(tx: Tx, plan: { id: string; kind: BulkPlanKind; reason: string | null }, runId: string, actor: Actor, scope: CompanyScope, cancel: CancelOne | undefined): Promise<ItemOutcome> {
  switch (plan.kind) {
    case "retry": {
      let outcome;
      try {
        outcome = await retryInTransaction(tx, runId, actor, scope, { audit: false });
      } catch (err) {
        if (err instanceof AppError && err.code === "NOT_FOUND") return refused("not_found", err.message);
        throw err;
      }
      if ("refused" in outcome) return refused(outcome.reason, outcome.refused);
      // A successor this plan did not make (the item was not done): someone retried the run since the preview.
      if (!outcome.created) return refused("existing_successor", `Retried since the preview as run ${outcome.run.id}; this plan does not retry it again.`);
      return { result: "retried", resultReason: null, resultDetail: `Started run ${outcome.run.id}.`, successorId: outcome.run.id, leasesQueued: outcome.leasesQueued };
    }
    case "cancel": {
      if (!cancel) throw new AppError("INTERNAL", "a cancel plan needs the cancel service");
      // cancelRun judges the run (admitCancel) under its own row lock and writes its own entry, naming the plan.
      let outcome: CancelOutcome;
      try {
        outcome = await cancel(runId, { ...(plan.reason ? { reason: plan.reason } : {}), planId: plan.id });
      } catch (err) {
        if (err instanceof AppError && err.code === "NOT_FOUND") return refused("not_found", err.message);
        throw err;
      }
      if (outcome.result === "refused") return refused(outcome.reason, outcome.refusal);
      const leases = outcome.leases.map((l) => `sandbox lease ${l.leaseId}: ${l.outcome}`).join("; ");
      return { result: "cancelled", resultReason: null, resultDetail: `Cancelled${leases ? ` (${leases})` : ""}.`, successorId: null, leasesQueued: [] };
    }
    default:
      return assertNever(plan.kind);
  }
}

function refused(reason: string, detail: string): ItemOutcome {
  return { result: "refused", resultReason: reason, resultDetail: detail, successorId: null, leasesQueued: [] };
}

/** The item's transaction again when a unique index refused its write (a racing Retry or submit committed first). */
async function attempt<T>(fn: () => Promise<T>): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await fn();
    } catch (err) {
      if (!isUniqueViolation(err) || i >= ITEM_ATTEMPTS) throw err;
    }
  }
}

function refusalCode(reason: Extract<BulkConfirmation, { verdict: "refused" }>["reason"]): AppErrorCode {
  switch (reason) {
    case "out_of_scope":
      return "FORBIDDEN";
    case "wrong_word":
      return "INVALID_INPUT";
    case "expired":
      return "PRECONDITION_FAILED";
    default:
      return assertNever(reason);
  }
}
