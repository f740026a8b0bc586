import { writeAudit, type Actor } from "../audit/write";
import { Prisma, type Db } from "../db/client";
import { assertNever, admitBulkConfirmation, type BulkConfirmation, type BulkPlanKind } from "../engine";
import { AppError, type AppErrorCode } from "../errors";
import type { CancelTaken, LeaseTeardown } from "../services";
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
 *
 * A cancelled run's sandbox is torn down after its item committed, outside any transaction:
 * the provider may hang, and what was done (the run cancelled, the item recorded) must not
 * wait on it or roll back with it. The item says `teardown: pending` until the teardown ends,
 * then `done` or `failed: …`; the confirmation waits for it a bounded time.
 */

type Tx = Prisma.TransactionClient;

interface ItemOutcome {
  result: BulkResult;
  resultReason: string | null;
  resultDetail: string | null;
  successorId: string | null;
  leasesQueued: string[];
  /** A cancelled run's sandboxes, torn down once the item's transaction committed (null: none). */
  tearDown: (() => Promise<LeaseTeardown[]>) | null;
}

export interface BulkConfirmOutcome {
  plan: BulkPlan;
  /** The retried runs' leases handed to cleanup by this confirmation (services.tearDownRetriedLeases takes them). */
  leasesQueued: string[];
}

/**
 * Cancelled runs' teardowns at once in this process: a plan of hundreds of runs does not open
 * hundreds of provider calls together. A teardown holds no transaction (only a connection for
 * each of its short writes).
 */
const teardownSlots = slots(4);

/** How long a confirmation waits for its cancelled runs' teardowns before it answers; what is left goes on, `pending`. */
export const TEARDOWN_WAIT_MS = 20_000;

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

/** Long enough for one run's Retry or Cancel (no provider call: database writes only) while other confirmations hold the pool's connections. */
const ITEM_TX = { maxWait: 30_000, timeout: 30_000 } as const;

/**
 * One run's Cancel in the item's transaction (services.cancelRunIn, under the confirming
 * person's scope), for a cancel plan: the run is cancelled when `tx` commits, its teardown after.
 */
export type CancelOne = (tx: Prisma.TransactionClient, runId: string, options: { reason?: string; planId: string }) => Promise<CancelTaken>;

export interface ConfirmOptions {
  cancel?: CancelOne;
  now?: Date;
  /** The bound on the wait for cancelled runs' teardowns (TEARDOWN_WAIT_MS; Infinity: until they end, as the CLI waits). */
  teardownWaitMs?: number;
}

export async function confirmBulkPlan(db: Db, instanceId: string, scope: CompanyScope, actor: Actor, raw: BulkConfirmInput, opts: ConfirmOptions = {}): Promise<BulkConfirmOutcome> {
  const now = opts.now ?? new Date();
  const input = bulkConfirmInput.parse(raw);
  const plan = await db.bulkPlan.findFirst({ where: { id: input.planId, instanceId } });
  if (!plan) throw new AppError("NOT_FOUND", `no bulk plan ${input.planId}: preview the set first`);
  const action = `run.bulk_${plan.kind}`;
  const companies = await db.$queryRaw<Array<{ company_id: string }>>`SELECT DISTINCT r.company_id FROM bulk_plan_items i JOIN runs r ON r.id = i.run_id WHERE i.plan_id = ${plan.id}::uuid`;
  const judgement = admitBulkConfirmation({ plan, word: input.confirm, planCompanies: companies.map((c) => c.company_id), scope, now });
  if (judgement.verdict === "refused") {
    await writeAudit(db, actor, { action, targetType: "bulk_plan", targetId: plan.id, outcome: "refused", detail: { reason: judgement.reason, refusal: judgement.refusal } });
    throw new AppError(refusalCode(judgement.reason), judgement.refusal);
  }
  if (judgement.first) {
    await db.bulkPlan.updateMany({ where: { id: plan.id, confirmedAt: null }, data: { confirmedAt: new Date(), confirmedBy: actor.id } });
  }

  const leasesQueued: string[] = [];
  const teardowns: Array<Promise<void>> = [];
  let carried = 0;
  /** Carries the item out in `tx`; what it handed to cleanup (or has to tear down) acts only once `tx` committed. */
  const carry = async (tx: Tx, runId: string): Promise<{ runId: string; leases: string[]; tearDown: ItemOutcome["tearDown"] }> => {
    const outcome = await carryOut(tx, plan, runId, actor, scope, opts.cancel);
    await tx.bulkPlanItem.update({
      where: { planId_runId: { planId: plan.id, runId } },
      data: {
        result: outcome.result,
        resultReason: outcome.resultReason,
        resultDetail: outcome.resultDetail,
        successorId: outcome.successorId,
        teardown: outcome.tearDown ? "pending" : null,
        doneAt: new Date(),
      },
    });
    return { runId, leases: outcome.leasesQueued, tearDown: outcome.tearDown };
  };
  const committed = (took: Awaited<ReturnType<typeof carry>> | null) => {
    if (!took) return;
    carried++;
    leasesQueued.push(...took.leases);
    const { tearDown } = took;
    // The item's transaction committed: the run is cancelled and recorded so whatever the provider does now.
    if (tearDown) teardowns.push(teardownSlots(() => recordTeardown(db, plan.id, took.runId, tearDown)));
  };

  // First the items nobody holds, so that concurrent confirmations share the work…
  for (;;) {
    const took = await attempt(() =>
      db.$transaction(async (tx) => {
        const [item] = await tx.$queryRaw<Array<{ run_id: string }>>`SELECT run_id FROM bulk_plan_items WHERE plan_id = ${plan.id}::uuid AND admitted AND result IS NULL
          ORDER BY position LIMIT 1 FOR UPDATE SKIP LOCKED`;
        return item ? await carry(tx, item.run_id) : null;
      }, ITEM_TX),
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
        db.$transaction(async (tx) => {
          const [item] = await tx.$queryRaw<Array<{ result: string | null }>>`SELECT result FROM bulk_plan_items WHERE plan_id = ${plan.id}::uuid AND run_id = ${runId}::uuid FOR UPDATE`;
          return item && item.result === null ? await carry(tx, runId) : null;
        }, ITEM_TX),
      ),
    );
  }
  // The teardowns this confirmation started, for a bounded time: the answer (and the plan's
  // audit entry, when this confirmation finishes the plan) says what ended by then.
  await within(opts.teardownWaitMs ?? TEARDOWN_WAIT_MS, Promise.all(teardowns));

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
        runs: view.items.map((i) => ({
          runId: i.runId,
          admitted: i.admitted,
          result: i.admitted ? i.result : "refused_at_preview",
          reason: i.admitted ? i.resultReason : i.reason,
          successorId: i.successorId,
          ...(i.teardown ? { teardown: i.teardown } : {}),
        })),
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
      return { result: "retried", resultReason: null, resultDetail: `Started run ${outcome.run.id}.`, successorId: outcome.run.id, leasesQueued: outcome.leasesQueued, tearDown: null };
    }
    case "cancel": {
      if (!cancel) throw new AppError("INTERNAL", "a cancel plan needs the cancel service");
      // The Cancel judges the run (admitCancel) under its row lock and writes its own entry,
      // naming the plan, in this item's transaction: the run is cancelled and the item says so
      // in one commit. A NOT_FOUND is thrown before it wrote anything.
      let outcome: CancelTaken;
      try {
        outcome = await cancel(tx, runId, { ...(plan.reason ? { reason: plan.reason } : {}), planId: plan.id });
      } catch (err) {
        if (err instanceof AppError && err.code === "NOT_FOUND") return refused("not_found", err.message);
        throw err;
      }
      if (outcome.result === "refused") return refused(outcome.reason, outcome.refusal);
      const n = outcome.leases.length;
      const detail = n === 0 ? "Cancelled." : `Cancelled; its sandbox${n === 1 ? "" : "es"} torn down after (lease${n === 1 ? "" : "s"} ${outcome.leases.join(", ")}).`;
      return { result: "cancelled", resultReason: null, resultDetail: detail, successorId: null, leasesQueued: [], tearDown: n > 0 ? outcome.tearDown : null };
    }
    default:
      return assertNever(plan.kind);
  }
}

function refused(reason: string, detail: string): ItemOutcome {
  return { result: "refused", resultReason: reason, resultDetail: detail, successorId: null, leasesQueued: [], tearDown: null };
}

/** A teardown's result in a few words, for a person reading the item; what failed is the sweep's (§2.6). */
const TEARDOWN_TEXT_MAX = 1_000;

/**
 * Runs a cancelled run's teardown (its item committed) and adds its result to the item: `done`
 * when every sandbox is gone, else `failed: …` with each lease's outcome. Only a `pending`
 * item is written, so a repeat never overwrites a result. A write that fails leaves the item
 * `pending`: the lease's own status (the run page) still says what became of the sandbox.
 */
async function recordTeardown(db: Db, planId: string, runId: string, tearDown: () => Promise<LeaseTeardown[]>): Promise<void> {
  let teardown: string;
  try {
    const leases = await tearDown();
    const left = leases.filter((l) => !l.done);
    teardown = left.length === 0 ? "done" : `failed: ${left.map((l) => `sandbox lease ${l.leaseId}: ${l.outcome}`).join("; ")}`;
  } catch (err) {
    teardown = `failed: ${err instanceof Error ? err.message : String(err)}; the sweep tears the sandbox down`;
  }
  await db.bulkPlanItem.updateMany({ where: { planId, runId, teardown: "pending" }, data: { teardown: teardown.slice(0, TEARDOWN_TEXT_MAX) } }).catch(() => undefined);
}

/** Waits for `work` at most `ms` (Infinity: until it ends); what is left goes on. */
async function within(ms: number, work: Promise<unknown>): Promise<void> {
  if (!Number.isFinite(ms)) {
    await work;
    return;
  }
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([work, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
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
