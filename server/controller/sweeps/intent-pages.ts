import { asIdentity } from "../../engine";
import { Prisma, prepared, readRows, type Db, type SandboxCreationIntent } from "../../db/client";
import type { ControllerContext } from "../context";
import { judgeExit } from "../observe";
import { passRow } from "./pass";

/**
 * The creation-intent sweep's page reads (docs/rules.md §2.5): pending intents in id order,
 * a page a statement, and the creators that hold pending intents and have exited.
 */

/** What the sweep reads of a pending intent: on the page read, and again under the row's lock. */
export type PendingIntent = Pick<SandboxCreationIntent, "id" | "instanceId" | "companyId" | "runId" | "creationName" | "creator" | "creatorBootId" | "createdAt" | "nextAttemptAt" | "settleDeadline"> & {
  /** A lease names this intent (the acquire committed after all). */
  committed: boolean;
};

export const INTENT_COLUMNS = Prisma.sql`
  i.operation_id AS id, i.instance_id AS "instanceId", i.company_id AS "companyId", i.run_id AS "runId",
  i.creation_name AS "creationName", i.creator, i.creator_boot_id AS "creatorBootId", i.created_at AS "createdAt",
  i.next_attempt_at AS "nextAttemptAt", i.settle_deadline AS "settleDeadline"`;

/**
 * A pending intent as the pager reads it: its times, and the database's clock as the page
 * was read, come as the ISO strings the engine's evidence holds (parsing three timestamps
 * per row into dates and printing them back was a third of the pass).
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
 * and a `SELECT now()` of its own per page made the pass twice its raw scan).
 * The page is cut first, and each of its rows probes the leases' intent index (a lateral
 * read, which PostgreSQL cannot turn into a hash of the whole table): an EXISTS beside the
 * page's own index range was costed for every pending row, not the page's, and PostgreSQL
 * hashed all of `environment_leases` for each page instead (245 ms a page at 100 k
 * runs).
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

/**
 * The creators (by boot id) that hold pending intents and have provably exited (§2.4): one
 * index skip per distinct creator, one probe each. Their intents are swept first, so a
 * restarted controller reaches its predecessor's orphans without reading a backlog of live
 * creators' intents before them. Only an order: the full pass still pages through
 * every pending intent, and every row is judged again under its own lock.
 */
export async function exitedCreators(ctx: ControllerContext, passId: string, trigger: string, companies?: string[]): Promise<string[]> {
  // One statement with the pass's own row (at a small backlog, a pass's fixed round trips were most of it).
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
