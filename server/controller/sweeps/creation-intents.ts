import crypto from "node:crypto";
import { databaseNow } from "../../db/clock";
import { Prisma } from "../../db/client";
import type { CreationIntentEvidence } from "../../engine";
import { UUID_PATTERN } from "../../lib/ids";
import { inLanes, lanePool } from "../../lib/lanes";
import { pagesById } from "../../lib/pages";
import { ProviderError } from "../../providers/errors";
import { normaliseLabels } from "../../providers/labels";
import type { SandboxView } from "../../providers/types";
import type { ControllerContext } from "../context";
import { intentEvidence, pageEvidence, pageProbes } from "../observe";
import { json, proofData, recordProof } from "../records";
import { creationIntent } from "../rules";
import { teardownHandedOver, teardownLease, type HandedOverLease } from "../teardown";
import { exitedCreators, INTENT_COLUMNS, pendingIntentsPage, type PendingIntent, type PendingIntentRow } from "./intent-pages";
import { relookResolvedAbsent } from "./late";
import { closePass, count, countDestroyed, openPass, summary, type SweepSummary } from "./pass";
import { reclaimWrites, type Reclaim } from "./reclaim-writes";

/**
 * The creation-intent sweep (docs/rules.md §2.5). It pages through the pending intents in a
 * stable id order with a cursor (so no number of live, foreign or unprovable rows can hide a
 * due one), locks each row it acts on (FOR UPDATE SKIP LOCKED: several controllers on one
 * database never act on the same row twice), asks the engine, and stores every decision that
 * changes something as a proof.
 */

function readPending(ctx: ControllerContext, after: string | null, only: { companies?: string[]; creators?: string[] }): Promise<PendingIntentRow[]> {
  return pendingIntentsPage(ctx.db, { instanceId: ctx.config.instanceId, pageSize: ctx.config.pageSize, after, ...only });
}

/** `companies` limits a sweep to those companies' rows (a person's "sweep now"); unset, all. */
export async function sweepCreationIntents(ctx: ControllerContext, trigger = "interval", companies?: string[]): Promise<SweepSummary> {
  // The pass's row with its exited creators, and beside them the first page of the full pass
  // (three round trips in a row were most of a pass over a small backlog). The
  // first page is of use when no creator has exited; else it is read again after their rows.
  const passId = crypto.randomUUID();
  const firstRead = readPending(ctx, null, { companies });
  firstRead.catch(() => {}); // awaited below, or dropped
  let exited: string[] | Error;
  try {
    exited = await exitedCreators(ctx, passId, trigger, companies);
  } catch (err) {
    // The row may not have been written either: write it alone (a lost reply's row stays as it
    // was), so the pass is recorded with its error; failing that, the pass goes on unrecorded.
    exited = err instanceof Error ? err : new Error(String(err));
    await openPass(ctx, "creation_intents", trigger, passId).catch((openErr: unknown) => ctx.log.error({ err: String(openErr) }, "sweep pass could not be recorded"));
  }
  const s = summary("creation_intents", passId);
  const toTearDown: Array<HandedOverLease> = [];
  let error: string | null = null;
  // A pool of lanes fed by the pager: due rows are judged a batch at a time under their locks
  // and the sandboxes reclaimed torn down in the same lane, while the pager reads on (no
  // barrier per page). At most `sweepLanes` provider calls are in flight.
  const { batchSize, batchLanes } = reclaimBatching(ctx.config.sweepLanes);
  const lanes = lanePool<PendingIntentRow[]>(batchLanes, async (batch) => {
    const claimed = await judgeIntents(ctx, batch, s);
    countDestroyed(s, await teardownHandedOver(ctx, claimed));
  });
  try {
    const probe = pageProbes(ctx);
    // Most rows wait for a live or unprovable creator: judge those from the page read,
    // without a lock; only rows the engine would act on go to a lane, judged again there.
    const feed = async (page: PendingIntentRow[], skip: ReadonlySet<string>) => {
      s.pages += 1;
      // The database's clock as the page was read: the intents' deadlines were written on it, maybe by another host.
      const evidenceOf = pageEvidence(ctx, page[0]?.readAt ?? "", probe);
      let batch: PendingIntentRow[] = [];
      for (const intent of page) {
        if (intent.creatorBootId !== null && skip.has(intent.creatorBootId)) continue;
        const { verdict } = creationIntent(ctx.config, evidenceOf(intent, intent.committed));
        if (verdict.verdict === "wait") count(s, intent.id, verdict);
        else batch.push(intent);
        if (batch.length === batchSize) {
          await lanes.push(batch);
          batch = [];
        }
      }
      if (batch.length > 0) await lanes.push(batch);
    };
    const stop = () => ctx.drain.signal.aborted;
    if (exited instanceof Error) throw exited;
    if (exited.length > 0) {
      for await (const page of pagesById((after) => readPending(ctx, after, { companies, creators: exited }), stop, { readAhead: true })) await feed(page, new Set());
    }
    // Every pending intent in id order (§2.5 step 1); the exited creators' rows were just fed.
    // The next page is read while this one is judged: the lanes only change rows already read.
    const fed = new Set(exited);
    const read = (after: string | null) => (after === null && exited.length === 0 ? firstRead : readPending(ctx, after, { companies }));
    if (!stop()) for await (const page of pagesById(read, stop, { readAhead: true })) await feed(page, fed);
    await lanes.drain();
    if (!ctx.drain.signal.aborted) await relookResolvedAbsent(ctx, s, toTearDown, companies);
    await inLanes(toTearDown, ctx.config.sweepLanes, (claimed) => tearDownClaimed(ctx, claimed, s));
  } catch (err) {
    error = err instanceof Error ? err.message : String(err);
    ctx.log.error({ err: error }, "creation-intent sweep failed");
  }
  await lanes.drain().catch(() => {}); // nothing in flight outlives its pass
  await closePass(ctx, s, error);
  return s;
}

/** Tears down a lease its reclaim created already claimed (no sweep can take it in between). */
async function tearDownClaimed(ctx: ControllerContext, claimed: HandedOverLease, s: SweepSummary): Promise<void> {
  countDestroyed(s, [await teardownLease(ctx, claimed.lease.id, claimed)]);
}

/**
 * Batches of due intents: `batchSize` rows judged in one transaction (one lock, one ownership
 * read, one write for all its reclaims: a transaction per row made the database
 * round trips most of a reclaim's cost), `batchLanes` batches at once, so that at most
 * `sweepLanes` provider calls are in flight.
 */
export function reclaimBatching(sweepLanes: number): { batchSize: number; batchLanes: number } {
  const batchSize = Math.min(RECLAIM_BATCH, sweepLanes);
  return { batchSize, batchLanes: Math.max(1, Math.floor(sweepLanes / batchSize)) };
}
const RECLAIM_BATCH = 4;

type LockedIntent = PendingIntent & { existingRunId: string | null };

/** Under the rows' locks, the intents as stored, whether a lease names each and the run it names (if that run exists). */
async function lockPending(tx: Prisma.TransactionClient, ids: readonly string[]): Promise<LockedIntent[]> {
  // Probe and qualification acquires name runs that never existed (and ids that are no uuid).
  return tx.$queryRaw<LockedIntent[]>`
    SELECT ${INTENT_COLUMNS}, EXISTS (SELECT 1 FROM environment_leases l WHERE l.intent_id = i.operation_id) AS committed,
      (SELECT r.id::text FROM runs r WHERE r.id = CASE WHEN i.run_id ~* ${UUID_PATTERN.source} THEN i.run_id::uuid END) AS "existingRunId"
    FROM sandbox_creation_intents i
    WHERE i.operation_id = ANY(${ids}::text[]) AND i.status = 'pending'::"IntentStatus"
    ORDER BY i.operation_id
    FOR UPDATE OF i SKIP LOCKED`;
}

type Inspection =
  | { ok: true; inspection: NonNullable<CreationIntentEvidence["inspection"]>; sandboxId: string | null; sandbox: SandboxView | null }
  | { ok: false; error: string };

/** Asks the provider for the sandbox by exact creation name (§2.5 step 3). */
async function inspect(ctx: ControllerContext, creationName: string): Promise<Inspection> {
  try {
    const found = await ctx.provider.getByName(creationName);
    if (found && found.state !== "destroyed") {
      return { ok: true, sandboxId: found.id, sandbox: found, inspection: { found: true, sandbox: { name: found.name, labels: normaliseLabels(found.labels) } } };
    }
    return { ok: true, sandboxId: null, sandbox: null, inspection: { found: false } };
  } catch (err) {
    return { ok: false, error: ProviderError.is(err) ? err.message : String(err) };
  }
}

/**
 * Judges a batch of due intents under their rows' locks; returns the leases to tear down.
 * The provider is asked while the locks are held: with several controllers on one backlog, the
 * others skip the rows at once instead of each asking the provider for them too (asking first,
 * unlocked, multiplied the provider's calls by the number of controllers).
 */
async function judgeIntents(ctx: ControllerContext, rows: ReadonlyArray<Pick<PendingIntent, "id">>, s: SweepSummary): Promise<HandedOverLease[]> {
  return ctx.db.$transaction(
    async (tx) => {
      const locked = await lockPending(tx, rows.map((r) => r.id)); // the others: another controller holds them, or they were resolved
      const now = await databaseNow(tx);
      const asked: Array<{ intent: LockedIntent; base: CreationIntentEvidence; links: { intentId: string; runId: string | null }; proofs: Prisma.ProofCreateManyInput[]; due: { nextAttemptAt?: Date } }> = [];
      for (const intent of locked) {
        const id = intent.id;
        const { evidence: base, verdict: first } = creationIntent(ctx.config, intentEvidence(ctx, intent, intent.committed, now));
        const links = { intentId: id, runId: intent.existingRunId };
        switch (first.verdict) {
          case "wait":
            count(s, id, first);
            continue;
          case "commit":
            count(s, id, first);
            await recordProof(tx, first, base, ctx.identity.bootId, links);
            await tx.sandboxCreationIntent.update({ where: { id }, data: { status: "committed", resolvedAt: now } });
            continue;
          case "inspect":
            break;
          default:
            throw new Error(`creation_intent without inspection gave ${first.verdict}`);
        }
        // Written with the decision below (the proofs, the intent).
        const proofs: Prisma.ProofCreateManyInput[] = [];
        const due: { nextAttemptAt?: Date } = {};
        if (intent.nextAttemptAt > now) {
          // Due only because its creator exited (§2.5 step 2): that proof is recorded on its own.
          proofs.push(proofData(first, base, ctx.identity.bootId, links));
          due.nextAttemptAt = now;
        }
        asked.push({ intent, base, links, proofs, due });
      }

      // Every sandbox of the batch asked for at once (the batch is at most `sweepLanes` long).
      const looked = await Promise.all(asked.map((a) => inspect(ctx, a.intent.creationName)));
      const reclaims: Reclaim[] = [];
      for (const [i, { intent, base, links, proofs, due }] of asked.entries()) {
        const id = intent.id;
        const answer = looked[i];
        if (!answer) throw new Error(`no inspection for intent ${id}`);
        if (!answer.ok) {
          // The provider could not be asked: nothing is decided, the intent is tried again.
          if (proofs.length > 0) await tx.proof.createMany({ data: proofs });
          await tx.sandboxCreationIntent.update({
            where: { id },
            data: { ...due, attempts: { increment: 1 }, lastInspection: json({ error: answer.error, at: now.toISOString() }), lastInspectedAt: now },
          });
          count(s, id, { verdict: "inspect_failed", reason: "provider_error" });
          continue;
        }
        const { inspection, sandboxId, sandbox } = answer;
        const { evidence, verdict } = creationIntent(ctx.config, { ...base, inspection });
        count(s, id, verdict);
        proofs.push(proofData(verdict, evidence, ctx.identity.bootId, { ...links, sandboxId }));
        const lastInspection = { ...inspection, at: now.toISOString(), sandboxId };
        if (verdict.verdict === "reclaim") {
          s.reclaimed += 1;
          reclaims.push({
            intent,
            proofs,
            runId: links.runId,
            leaseIntentId: id,
            sandboxId,
            cleanupStatus: "reclaimed_from_intent",
            lastInspection,
            nextAttemptAt: due.nextAttemptAt ?? null,
            now,
            observed: sandbox,
          });
          continue;
        }
        await tx.proof.createMany({ data: proofs });
        const inspected = { ...due, lastInspection: json(lastInspection), lastInspectedAt: now, attempts: { increment: 1 } };
        switch (verdict.verdict) {
          case "manual_reconciliation":
            await tx.sandboxCreationIntent.update({ where: { id }, data: { ...inspected, status: "manual_reconciliation", resolvedAt: now } });
            continue;
          case "stay_pending": {
            // Look again a few times before the settle deadline (a late create can still land).
            const retryIn = Math.min(30_000, Math.max(1_000, (intent.settleDeadline.getTime() - now.getTime()) / 4));
            await tx.sandboxCreationIntent.update({ where: { id }, data: { ...inspected, nextAttemptAt: new Date(now.getTime() + retryIn) } });
            continue;
          }
          case "resolve_absent":
            await tx.sandboxCreationIntent.update({ where: { id }, data: { ...inspected, status: "resolved_absent", resolvedAt: now } });
            continue;
          default:
            throw new Error(`unexpected creation_intent verdict ${verdict.verdict}`);
        }
      }
      return reclaims.length > 0 ? reclaimWrites(tx, ctx, reclaims) : [];
    },
    { timeout: 60_000 },
  );
}

