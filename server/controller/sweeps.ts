import { databaseNow } from "../db/clock";
import crypto from "node:crypto";
import { z } from "zod";
import { Prisma, prepared, readRows, type Db, type EnvironmentLease, type SandboxCreationIntent } from "../db/client";
import { asIdentity, type CreationIntentEvidence, type TeardownFenceEvidence, type Verdict } from "../engine";
import { pagesById } from "../lib/pages";
import { ProviderError } from "../providers/errors";
import { normaliseLabels } from "../providers/labels";
import type { ControllerContext } from "./context";
import { evidenceIdentity } from "./context";
import { intentEvidence, judgeExit, pageEvidence, pageProbes, probeFor } from "./observe";
import { ownershipRecordsOf, type SandboxRef } from "../sandboxes/evidence";
import type { SandboxView } from "../providers/types";
import { judgeOwnership, judgeOwnerships } from "./ownership";
import { json, proofData, recordProof } from "./records";
import { creationIntent, teardownFence } from "./rules";
import { claimFields, teardownHandedOver, teardownLease, type HandedOverLease, type TeardownOutcome } from "./teardown";
import { isUuid, UUID_PATTERN } from "../lib/ids";
import { inLanes } from "../lib/lanes";
import { checkOrphanCost } from "./orphan-cost";

/**
 * The sweeps of docs/rules.md §2.5 and §2.6. Each pages through its rows in a stable id
 * order with a cursor (so no number of live, foreign or unprovable rows can hide a due
 * one), locks each row it acts on (FOR UPDATE SKIP LOCKED: several controllers on one
 * database never act on the same row twice), asks the engine, and stores every decision
 * that changes something as a proof.
 */

/** What one sweep pass decided: the controller's answer, the tRPC output and the audit detail. */
export const sweepSummarySchema = z.object({
  kind: z.enum(["creation_intents", "teardown"]),
  passId: z.string(),
  judged: z.number().int(),
  pages: z.number().int(),
  verdicts: z.record(z.string(), z.number().int()),
  reclaimed: z.number().int(),
  destroyed: z.number().int(),
  decisions: z.array(z.object({ id: z.string(), verdict: z.string(), reason: z.string().nullable() })),
});
export type SweepSummary = z.infer<typeof sweepSummarySchema>;

function summary(kind: SweepSummary["kind"], passId: string): SweepSummary {
  return { kind, passId, judged: 0, pages: 0, verdicts: {}, reclaimed: 0, destroyed: 0, decisions: [] };
}

function count(s: SweepSummary, id: string, verdict: Verdict | { verdict: string; reason: string | null }) {
  s.judged += 1;
  s.verdicts[verdict.verdict] = (s.verdicts[verdict.verdict] ?? 0) + 1;
  if (s.decisions.length < 500) s.decisions.push({ id, verdict: verdict.verdict, reason: verdict.reason });
}

/** The pass's row, written at its start (straight to the pool: a pass is a few statements, issue 31). */
async function openPass(ctx: ControllerContext, kind: SweepSummary["kind"], trigger: string, id: string = crypto.randomUUID()): Promise<string> {
  await readRows(ctx.db, prepared(Prisma.sql`WITH pass AS (${passRow(ctx, id, kind, trigger)}) SELECT 1`));
  return id;
}

/** The INSERT of a pass's row, for a statement's WITH (a data-modifying CTE runs whether read or not). */
function passRow(ctx: ControllerContext, id: string, kind: SweepSummary["kind"], trigger: string): Prisma.Sql {
  return Prisma.sql`INSERT INTO sweep_passes (id, kind, instance_id, boot_id, trigger, started_at)
    VALUES (${id}::uuid, ${kind}, ${ctx.config.instanceId}, ${ctx.identity.bootId}, ${trigger}, ${new Date()}::timestamptz)
    ON CONFLICT (id) DO NOTHING`;
}

async function closePass(ctx: ControllerContext, s: SweepSummary, error: string | null) {
  await readRows(
    ctx.db,
    prepared(Prisma.sql`
      UPDATE sweep_passes SET finished_at = ${new Date()}::timestamptz, judged = ${s.judged}, pages = ${s.pages}, verdicts = ${JSON.stringify(s.verdicts)}::jsonb,
        reclaimed = ${s.reclaimed}, destroyed = ${s.destroyed}, error = ${error}
      WHERE id = ${s.passId}::uuid`),
  );
}

// ───────────────────────── creation intents (§2.5) ─────────────────────────

/** What the sweep reads of a pending intent: on the page read, and again under the row's lock. */
export type PendingIntent = Pick<SandboxCreationIntent, "id" | "instanceId" | "companyId" | "runId" | "creationName" | "creator" | "creatorBootId" | "createdAt" | "nextAttemptAt" | "settleDeadline"> & {
  /** A lease names this intent (the acquire committed after all). */
  committed: boolean;
};

const INTENT_COLUMNS = Prisma.sql`
  i.operation_id AS id, i.instance_id AS "instanceId", i.company_id AS "companyId", i.run_id AS "runId",
  i.creation_name AS "creationName", i.creator, i.creator_boot_id AS "creatorBootId", i.created_at AS "createdAt",
  i.next_attempt_at AS "nextAttemptAt", i.settle_deadline AS "settleDeadline"`;

/**
 * A pending intent as the pager reads it: its times, and the database's clock as the page
 * was read, come as the ISO strings the engine's evidence holds (issue 31: parsing three
 * timestamps per row into dates and printing them back was a third of the pass).
 */
export type PendingIntentRow = Omit<PendingIntent, "createdAt" | "nextAttemptAt" | "settleDeadline"> & {
  createdAt: string;
  nextAttemptAt: string;
  settleDeadline: string;
  /** now() of the page's statement. */
  readAt: string;
};

/**
 * One page of pending intents after `after`, with whether a lease names each and the
 * database's clock: one round trip, straight to the pool (`readRows`: Prisma's `$queryRaw`
 * and a `SELECT now()` of its own per page made the pass twice its raw scan, issue 31).
 * The page is cut first, and each of its rows probes the leases' intent index (a lateral
 * read, which PostgreSQL cannot turn into a hash of the whole table): an EXISTS beside the
 * page's own index range was costed for every pending row, not the page's, and PostgreSQL
 * hashed all of `environment_leases` for each page instead (issue 13: 245 ms a page at
 * 100 k runs).
 */
export function pendingIntentsPage(
  db: Db,
  q: { instanceId: string; pageSize: number; after: string | null; companies?: string[]; creators?: string[] },
): Promise<PendingIntentRow[]> {
  const sql = Prisma.sql`
    SELECT p.*, c.hit IS NOT NULL AS committed, now() AS "readAt" FROM (
      SELECT ${INTENT_COLUMNS}
      FROM sandbox_creation_intents i
      WHERE i.instance_id = ${q.instanceId} AND i.status = 'pending'::"IntentStatus"
        ${q.creators ? Prisma.sql`AND i.creator_boot_id = ANY(${q.creators})` : Prisma.empty}
        ${q.companies ? Prisma.sql`AND i.company_id = ANY(${q.companies})` : Prisma.empty}
        ${q.after === null ? Prisma.empty : Prisma.sql`AND i.operation_id > ${q.after}`}
      ORDER BY i.operation_id
      LIMIT ${q.pageSize}
    ) p
    LEFT JOIN LATERAL (SELECT true AS hit FROM environment_leases l WHERE l.intent_id = p.id LIMIT 1) c ON true
    ORDER BY p.id`;
  // Planned once per connection, but not for a company filter (whose selectivity varies).
  return readRows<PendingIntentRow>(db, q.companies ? sql : prepared(sql), { isoTimestamps: true });
}

function readPending(ctx: ControllerContext, after: string | null, only: { companies?: string[]; creators?: string[] }): Promise<PendingIntentRow[]> {
  return pendingIntentsPage(ctx.db, { instanceId: ctx.config.instanceId, pageSize: ctx.config.pageSize, after, ...only });
}

/**
 * The creators (by boot id) that hold pending intents and have provably exited (§2.4): one
 * index skip per distinct creator, one probe each. Their intents are swept first, so a
 * restarted controller reaches its predecessor's orphans without reading a backlog of live
 * creators' intents before them (issue 13). Only an order: the full pass still pages through
 * every pending intent, and every row is judged again under its own lock.
 */
async function exitedCreators(ctx: ControllerContext, passId: string, trigger: string, companies?: string[]): Promise<string[]> {
  // One statement with the pass's own row (issue 31: at a small backlog, a pass's fixed round trips were most of it).
  const sql = Prisma.sql`
    WITH RECURSIVE c AS (
      (SELECT creator_boot_id AS boot_id FROM sandbox_creation_intents
        WHERE instance_id = ${ctx.config.instanceId} AND status = 'pending'::"IntentStatus" AND creator_boot_id IS NOT NULL
        ORDER BY creator_boot_id LIMIT 1)
      UNION ALL
      SELECT (SELECT creator_boot_id FROM sandbox_creation_intents
        WHERE instance_id = ${ctx.config.instanceId} AND status = 'pending'::"IntentStatus" AND creator_boot_id > c.boot_id
        ORDER BY creator_boot_id LIMIT 1)
      FROM c WHERE c.boot_id IS NOT NULL),
    pass AS (${passRow(ctx, passId, "creation_intents", trigger)})
    SELECT c.boot_id AS "bootId",
      (SELECT creator FROM sandbox_creation_intents
        WHERE instance_id = ${ctx.config.instanceId} AND status = 'pending'::"IntentStatus" AND creator_boot_id = c.boot_id
        ${companies ? Prisma.sql`AND company_id = ANY(${companies})` : Prisma.empty}
        LIMIT 1) AS creator
    FROM c WHERE c.boot_id IS NOT NULL`;
  const rows = await readRows<{ bootId: string; creator: unknown }>(ctx.db, companies ? sql : prepared(sql));
  return rows.filter((r) => r.creator !== null && judgeExit(ctx, asIdentity(r.creator)).verdict.verdict === "exited").map((r) => r.bootId);
}

/** `companies` limits a sweep to those companies' rows (a person's "sweep now"); unset, all. */
export async function sweepCreationIntents(ctx: ControllerContext, trigger = "interval", companies?: string[]): Promise<SweepSummary> {
  // The pass's row with its exited creators, and beside them the first page of the full pass
  // (issue 31: three round trips in a row were most of a pass over a small backlog). The
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

function countDestroyed(s: SweepSummary, results: readonly TeardownOutcome[]) {
  for (const r of results) if (r.outcome === "destroyed" || r.outcome === "already_gone") s.destroyed += 1;
}

/**
 * At most `limit` items in work at once; `push` waits for a free lane (the feeder slows to
 * the lanes' pace). The first failure is thrown by the next `push` or by `drain`.
 */
export function lanePool<T>(limit: number, work: (item: T) => Promise<void>): { push(item: T): Promise<void>; drain(): Promise<void> } {
  const running = new Set<Promise<void>>();
  let failure: { err: unknown } | null = null;
  const rethrow = () => {
    if (failure) throw failure.err;
  };
  return {
    async push(item) {
      while (running.size >= limit) await Promise.race(running);
      rethrow();
      const lane: Promise<void> = work(item)
        .catch((err: unknown) => {
          failure ??= { err };
        })
        .finally(() => running.delete(lane));
      running.add(lane);
    },
    async drain() {
      while (running.size > 0) await Promise.race(running);
      rethrow();
    },
  };
}

/**
 * Batches of due intents: `batchSize` rows judged in one transaction (one lock, one ownership
 * read, one write for all its reclaims: issue 13, a transaction per row made the database
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

/** How long after an intent resolved absent each sweep still looks for it (§2.5). */
export const LATE_MATERIALISATION_WINDOW_MS = 30 * 60_000;

/**
 * A create the provider finishes after the settle deadline (§2.5): for 30 minutes after an
 * intent resolved absent, each sweep looks its exact name up again. A sandbox that
 * appeared is reclaimed only with the ownership proof (the intent names it, labels match);
 * otherwise it goes to manual reconciliation untouched. Either way the proof is stored.
 */
async function relookResolvedAbsent(ctx: ControllerContext, s: SweepSummary, toTearDown: Array<HandedOverLease>, companies?: string[]) {
  // On the database's clock, which wrote `resolved_at`; by the index of status and resolution
  // time (a pass reads the window's rows, not every intent that ever resolved absent).
  const pages = pagesById(
    (after) => {
      const sql = Prisma.sql`
          SELECT operation_id AS id, creation_name AS "creationName" FROM sandbox_creation_intents
          WHERE instance_id = ${ctx.config.instanceId} AND status = 'resolved_absent'::"IntentStatus"
            AND resolved_at >= now() - make_interval(secs => ${LATE_MATERIALISATION_WINDOW_MS / 1000})
            ${companies ? Prisma.sql`AND company_id = ANY(${companies})` : Prisma.empty}
            ${after === null ? Prisma.empty : Prisma.sql`AND operation_id > ${after}`}
          ORDER BY operation_id
          LIMIT ${ctx.config.pageSize}`;
      // Planned once per connection, but not for a company filter (whose selectivity varies).
      return readRows<Pick<SandboxCreationIntent, "id" | "creationName">>(ctx.db, companies ? sql : prepared(sql));
    },
    () => ctx.drain.signal.aborted,
  );
  for await (const page of pages) {
    s.pages += 1;
    await inLanes(page, ctx.config.sweepLanes, async (intent) => {
      let found;
      try {
        found = await ctx.provider.getByName(intent.creationName);
      } catch {
        return; // asked again on the next sweep, inside the window
      }
      if (!found || found.state === "destroyed" || found.state === "destroying") return;
      const claimed = await reclaimLate(ctx, intent.id, found, s);
      if (claimed) toTearDown.push(claimed);
    });
  }
}

async function reclaimLate(ctx: ControllerContext, id: string, found: SandboxRef, s: SweepSummary): Promise<HandedOverLease | null> {
  return ctx.db.$transaction(async (tx) => {
    const rows = await tx.$queryRaw<Array<{ operation_id: string }>>`
      SELECT operation_id FROM sandbox_creation_intents
      WHERE operation_id = ${id} AND status = 'resolved_absent'::"IntentStatus"
      FOR UPDATE SKIP LOCKED`;
    if (rows.length === 0) return null;
    const intent = await tx.sandboxCreationIntent.findUniqueOrThrow({ where: { id } });
    const now = new Date();
    const { evidence, verdict } = await judgeOwnership(tx, ctx.config.instanceId, found, { type: "intent", id });
    count(s, id, verdict);
    const runId = await existingRunId(tx, intent);
    const links = { intentId: id, runId, sandboxId: found.id };
    const lastInspection = { found: true, sandboxId: found.id, name: found.name, labels: found.labels, at: now.toISOString(), by: "late_materialisation" };
    if (verdict.verdict !== "owned") {
      await recordProof(tx, verdict, evidence, ctx.identity.bootId, links);
      await tx.sandboxCreationIntent.update({ where: { id }, data: { lastInspection: json(lastInspection), lastInspectedAt: now, attempts: { increment: 1 }, status: "manual_reconciliation", resolvedAt: now } });
      return null;
    }
    // The lease names the intent only when the intent has none yet (a committed one kept its own).
    const committed = await tx.environmentLease.count({ where: { intentId: id } });
    s.reclaimed += 1;
    const [claimed] = await reclaimWrites(tx, ctx, [
      {
        intent,
        proofs: [proofData(verdict, evidence, ctx.identity.bootId, links)],
        runId,
        leaseIntentId: committed === 0 ? id : null,
        sandboxId: found.id,
        cleanupStatus: "reclaimed_late_materialisation",
        lastInspection,
        nextAttemptAt: null,
        now,
      },
    ]);
    return claimed ?? null;
  });
}

/** One intent's reclaim, as `reclaimWrites` takes it. */
interface Reclaim {
  intent: Pick<SandboxCreationIntent, "id" | "instanceId" | "companyId" | "creationName">;
  proofs: Prisma.ProofCreateManyInput[];
  runId: string | null;
  /** The intent the lease names (null: a committed lease already names it). */
  leaseIntentId: string | null;
  sandboxId: string | null;
  cleanupStatus: "reclaimed_from_intent" | "reclaimed_late_materialisation";
  lastInspection: object;
  nextAttemptAt: Date | null;
  now: Date;
  /** The sandbox just found by the intent's exact name: its teardown's ownership proof is judged and stored here. */
  observed?: SandboxView | null;
}

/**
 * The reclaim both intent paths share (a pending intent's, a late materialisation's): the
 * writes of a batch of reclaims in one statement (issue 13: three round trips per reclaim
 * before): the proofs; for each intent a pending_cleanup
 * lease, claimed for this controller's teardown in the same transaction (§2.6: an attempt id,
 * the claimer, a fence; a crash before the teardown leaves a fence whose claimer exited, which
 * the teardown sweep releases), so the teardown needs no claim of its own; and the intent
 * marked reclaimed.
 */
async function reclaimWrites(tx: Prisma.TransactionClient, ctx: ControllerContext, reclaims: readonly Reclaim[]): Promise<HandedOverLease[]> {
  // When the rows are written (what Prisma's now() defaults and @updatedAt gave): after the provider answered.
  const at = new Date();
  const made = reclaims.map((r) => {
    const attemptId = crypto.randomUUID();
    const claim = claimFields(ctx, attemptId, r.now);
    const lease: EnvironmentLease = {
      id: crypto.randomUUID(),
      runId: r.runId,
      instanceId: r.intent.instanceId,
      companyId: r.intent.companyId,
      intentId: r.leaseIntentId,
      provider: ctx.providerTarget,
      providerLeaseId: r.sandboxId,
      sandboxName: r.intent.creationName,
      remoteCwd: null,
      turn: null,
      acquisitionOutcome: "created",
      status: "pending_cleanup",
      cleanupStatus: r.cleanupStatus,
      cleanupAttempts: 0,
      nextCleanupAt: null,
      lastCleanupError: null,
      claimAttemptId: claim.claimAttemptId,
      claimRecord: claim.claimRecord as Prisma.JsonValue,
      fencedUntil: claim.fencedUntil,
      terminationReceipt: null,
      // A reclaimed sandbox's creation settings are unknown here.
      autoStopMinutes: null,
      autoDeleteMinutes: null,
      createdAt: at,
      updatedAt: at,
      endedAt: null,
    };
    return { r, lease, handed: { attemptId, lease } as HandedOverLease };
  });
  // The ownership proofs (§2.9) the teardowns act through, on the sandboxes just found: the
  // stored records that name each and the lease written with its proof (one commit, or neither).
  const written = reclaims.flatMap((r) => r.proofs);
  const observing = made.flatMap((m) => (m.r.observed ? [{ m, sandbox: m.r.observed }] : []));
  const judged = await judgeOwnerships(
    tx,
    ctx.config.instanceId,
    observing.map(({ m, sandbox }) => ({ sandbox, actingRecord: { type: "lease" as const, id: m.lease.id }, writing: ownershipRecordsOf(null, [m.lease]) })),
  );
  for (const [i, { m, sandbox }] of observing.entries()) {
    const j = judged[i];
    if (!j) throw new Error(`no ownership judgement for sandbox ${sandbox.id}`);
    written.push(proofData(j.verdict, j.evidence, ctx.identity.bootId, { leaseId: m.lease.id, runId: m.r.runId, sandboxId: sandbox.id }));
    m.handed.observed = { sandbox, ownership: j.verdict };
  }
  const proofs = written.map((p) => ({ ...p, id: crypto.randomUUID() }));
  const leases = made.map(({ lease }) => ({
    id: lease.id,
    runId: lease.runId,
    instanceId: lease.instanceId,
    companyId: lease.companyId,
    intentId: lease.intentId,
    provider: lease.provider,
    providerLeaseId: lease.providerLeaseId,
    sandboxName: lease.sandboxName,
    cleanupStatus: lease.cleanupStatus,
    claimAttemptId: lease.claimAttemptId,
    claimRecord: lease.claimRecord,
    fencedUntil: lease.fencedUntil,
  }));
  const intents = reclaims.map((r) => ({ id: r.intent.id, now: r.now, lastInspection: r.lastInspection, nextAttemptAt: r.nextAttemptAt }));
  const updated = await tx.$executeRaw(reclaimWriteSql({ at, proofs, leases, intents }));
  if (updated !== reclaims.length) throw new Error(`reclaim of intents ${reclaims.map((r) => r.intent.id).join(", ")}: ${updated} of ${reclaims.length} intent rows updated`);
  return made.map((m) => m.handed);
}

/** What one reclaim batch writes: proofs, claimed leases, and the intents marked reclaimed. */
export interface ReclaimRows {
  at: Date;
  proofs: Array<Prisma.ProofCreateManyInput & { id: string }>;
  leases: Array<
    Pick<
      EnvironmentLease,
      "id" | "runId" | "instanceId" | "companyId" | "intentId" | "provider" | "providerLeaseId" | "sandboxName" | "cleanupStatus" | "claimAttemptId" | "claimRecord" | "fencedUntil"
    >
  >;
  intents: Array<{ id: string; now: Date; lastInspection: unknown; nextAttemptAt: Date | null }>;
}

/**
 * One statement for a reclaim batch's writes. The intents' ids go in again as an array: the
 * planner takes jsonb_to_recordset for 100 rows and joined the intents by a sequential scan
 * (291 pages a batch at 5 k intents); with `= ANY` each is read by its primary key.
 */
export function reclaimWriteSql({ at, proofs, leases, intents }: ReclaimRows): Prisma.Sql {
  return prepared(Prisma.sql`
    WITH p AS (
      INSERT INTO proofs (id, kind, verdict, code, reason, checks, evidence, output, run_id, claim_id, intent_id, lease_id, sandbox_id, evaluated_by, evaluated_at)
      SELECT x.id, x.kind, x.verdict, x.code, x.reason, x.checks, x.evidence, x.output, x."runId", x."claimId", x."intentId", x."leaseId", x."sandboxId", x."evaluatedBy", ${at}::timestamptz
      FROM jsonb_to_recordset(${JSON.stringify(proofs)}::jsonb) AS x(id uuid, kind text, verdict text, code text, reason text, checks jsonb, evidence jsonb, output jsonb,
        "runId" uuid, "claimId" uuid, "intentId" text, "leaseId" uuid, "sandboxId" text, "evaluatedBy" text)),
    l AS (
      INSERT INTO environment_leases (id, run_id, instance_id, company_id, intent_id, provider, provider_lease_id, sandbox_name, acquisition_outcome, status, cleanup_status,
        claim_attempt_id, claim_record, fenced_until, created_at, updated_at)
      SELECT x.id, x."runId", x."instanceId", x."companyId", x."intentId", x.provider, x."providerLeaseId", x."sandboxName",
        'created'::"AcquisitionOutcome", 'pending_cleanup'::"LeaseStatus", x."cleanupStatus", x."claimAttemptId", x."claimRecord", x."fencedUntil", ${at}::timestamptz, ${at}::timestamptz
      FROM jsonb_to_recordset(${JSON.stringify(leases)}::jsonb) AS x(id uuid, "runId" uuid, "instanceId" text, "companyId" text, "intentId" text, provider text,
        "providerLeaseId" text, "sandboxName" text, "cleanupStatus" text, "claimAttemptId" text, "claimRecord" jsonb, "fencedUntil" timestamptz))
    UPDATE sandbox_creation_intents i SET status = 'reclaimed'::"IntentStatus", resolved_at = x.now, last_inspection = x."lastInspection",
      last_inspected_at = x.now, attempts = i.attempts + 1, next_attempt_at = COALESCE(x."nextAttemptAt", i.next_attempt_at), updated_at = ${at}::timestamptz
    FROM jsonb_to_recordset(${JSON.stringify(intents)}::jsonb) AS x(id text, now timestamptz, "lastInspection" jsonb, "nextAttemptAt" timestamptz)
    WHERE i.operation_id = x.id AND i.operation_id = ANY(${intents.map((x) => x.id)}::text[])`);
}

async function existingRunId(tx: Prisma.TransactionClient, intent: SandboxCreationIntent): Promise<string | null> {
  // Probe and qualification acquires name runs that never existed.
  if (!isUuid(intent.runId)) return null;
  const run = await tx.run.findUnique({ where: { id: intent.runId }, select: { id: true } });
  return run?.id ?? null;
}

// ───────────────────────── teardown: fences and pending cleanup (§2.6) ─────────────────────────

export async function sweepTeardown(ctx: ControllerContext, trigger = "interval", companies?: string[]): Promise<SweepSummary> {
  const s = summary("teardown", await openPass(ctx, "teardown", trigger));
  let error: string | null = null;
  try {
    await releaseLostFences(ctx, s, companies);
    await queueLeasesOfFinishedRuns(ctx, companies);
    await tearDownDue(ctx, s, companies);
    // What the orphans cost, instance-wide (orphan-cost.ts): not for a sweep of some companies only.
    if (!companies) await checkOrphanCost(ctx).catch((err: unknown) => ctx.log.error({ err: String(err) }, "orphan cost check failed"));
  } catch (err) {
    error = err instanceof Error ? err.message : String(err);
    ctx.log.error({ err: error }, "teardown sweep failed");
  }
  await closePass(ctx, s, error);
  return s;
}

/** Ends the fence of a claim whose claimer exited, unless a newer claim superseded it. */
async function releaseLostFences(ctx: ControllerContext, s: SweepSummary, companies?: string[]) {
  const pages = pagesById((after) =>
    ctx.db.environmentLease.findMany({
      where: { instanceId: ctx.config.instanceId, status: "pending_cleanup", fencedUntil: { not: null }, ...(companies ? { companyId: { in: companies } } : {}), ...(after ? { id: { gt: after } } : {}) },
      orderBy: { id: "asc" },
      take: ctx.config.pageSize,
      select: { id: true },
    }),
  );
  // The database's clock, which wrote the fences and the heartbeats (§2.10).
  const now = (await databaseNow(ctx.db)).toISOString();
  for await (const page of pages) {
    s.pages += 1;
    for (const { id } of page) {
      await ctx.db.$transaction(async (tx) => {
        const locked = await tx.$queryRaw<Array<{ id: string }>>`
          SELECT id FROM environment_leases WHERE id = ${id}::uuid AND fenced_until IS NOT NULL FOR UPDATE SKIP LOCKED`;
        if (locked.length === 0) return;
        const lease = await tx.environmentLease.findUniqueOrThrow({ where: { id } });
        const record = (lease.claimRecord ?? null) as { attemptId?: string; claimer?: unknown } | null;
        const claimer = asIdentity(record?.claimer);
        const controller = claimer?.bootId ? await tx.controllerProcess.findUnique({ where: { bootId: claimer.bootId }, select: { bootId: true, stoppedAt: true, lastSeenAt: true } }) : null;
        const raw: TeardownFenceEvidence = {
          kind: "teardown_fence",
          now,
          lease: { status: lease.status, claimAttemptId: lease.claimAttemptId, fencedUntil: lease.fencedUntil?.toISOString() ?? null },
          claimRecord: record?.attemptId ? { attemptId: record.attemptId, claimer } : null,
          observer: evidenceIdentity(ctx.identity),
          claimerProbe: probeFor(ctx, claimer),
          claimerHeartbeat: controller
            ? { bootId: controller.bootId, stoppedAt: controller.stoppedAt?.toISOString() ?? null, lastSeenAt: controller.lastSeenAt.toISOString(), silenceWindowMs: ctx.config.executorTimeoutMs }
            : null,
        };
        const { evidence, verdict } = teardownFence(ctx.config, raw);
        count(s, id, verdict);
        if (verdict.verdict !== "release") return;
        await recordProof(tx, verdict, evidence, ctx.identity.bootId, { leaseId: id, runId: lease.runId, sandboxId: lease.providerLeaseId });
        await tx.environmentLease.update({ where: { id }, data: { fencedUntil: null, nextCleanupAt: null, cleanupStatus: `fence_released:${verdict.reason}` } });
      });
    }
  }
}

/** A finished run holds nothing (chaos check R5): its active leases go to cleanup. */
async function queueLeasesOfFinishedRuns(ctx: ControllerContext, companies?: string[]) {
  await ctx.db.environmentLease.updateMany({
    where: { instanceId: ctx.config.instanceId, status: "active", ...(companies ? { companyId: { in: companies } } : {}), run: { status: { in: ["succeeded", "failed", "cancelled"] } } },
    data: { status: "pending_cleanup", cleanupStatus: "run_finished" },
  });
}

async function tearDownDue(ctx: ControllerContext, s: SweepSummary, companies?: string[]) {
  const now = await databaseNow(ctx.db);
  const pages = pagesById(
    (after) =>
      ctx.db.environmentLease.findMany({
        where: {
          instanceId: ctx.config.instanceId,
          status: "pending_cleanup",
          ...(companies ? { companyId: { in: companies } } : {}),
          OR: [{ fencedUntil: null }, { fencedUntil: { lte: now } }],
          AND: [{ OR: [{ nextCleanupAt: null }, { nextCleanupAt: { lte: now } }] }],
          ...(after ? { id: { gt: after } } : {}),
        },
        orderBy: { id: "asc" },
        take: ctx.config.pageSize,
        select: { id: true },
      }),
    () => ctx.drain.signal.aborted,
  );
  for await (const page of pages) {
    s.pages += 1;
    await inLanes(page, ctx.config.sweepLanes, async ({ id }) => {
      const result: TeardownOutcome = await teardownLease(ctx, id);
      if (result.outcome === "not_claimed") return;
      count(s, id, { verdict: result.outcome, reason: "reason" in result ? result.reason : null });
      if (result.outcome === "destroyed" || result.outcome === "already_gone") s.destroyed += 1;
    });
  }
}
