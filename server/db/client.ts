import crypto from "node:crypto";
import { PrismaPg } from "@prisma/adapter-pg";
import pg from "pg";
import { PrismaClient, type Prisma } from "./generated/client";
import { ISO_TIMESTAMPS } from "./timestamptz";

export type Db = PrismaClient;

/** The names of the statements `prepared` marked, by their text. */
const preparedNames = new Map<string, string>();

/**
 * Marks a statement of fixed text to be sent as a named prepared statement: PostgreSQL plans
 * it once per connection instead of on every call. For the hot statements of the sweeps,
 * where planning was a third of the database's time per reclaim (docs/decisions/0003-cost-at-scale.md). Only statements
 * whose best plan does not depend on their values: after five calls PostgreSQL may keep one
 * generic plan. Not for the lists, whose filters' selectivity varies.
 */
export function prepared(sql: Prisma.Sql): Prisma.Sql {
  if (!preparedNames.has(sql.text)) {
    preparedNames.set(sql.text, `rw_${crypto.createHash("sha1").update(sql.text).digest("hex").slice(0, 16)}`);
  }
  return sql;
}

/** Each client's own pool, for `readRows` (a transaction client has none). */
const pools = new WeakMap<Db, pg.Pool>();

/**
 * How long an interactive transaction waits for a free connection before it fails (Prisma's
 * default is 2 s). A controller's pool is small and fixed (RUNWARDEN_DB_POOL_MAX), so with
 * hundreds of runs finishing at once a transaction queues for its turn instead of failing.
 */
export const TRANSACTION_MAX_WAIT_MS = 30_000;

export function createDb(url: string, options: { max?: number; applicationName?: string; idleInTransactionTimeoutMs?: number } = {}): Db {
  // `application_name`: what pg_stat_activity shows, so a server's connections count per process
  // (a URL's own application_name wins: pg reads the connection string last).
  const pool = new pg.Pool({
    connectionString: url,
    max: options.max ?? 10,
    ...(options.applicationName ? { application_name: options.applicationName } : {}),
    // PostgreSQL ends a session left idle inside a transaction this long, and its row locks with
    // it: a process stalled mid-transaction (SIGSTOP, a paused VM) cannot hold a run's row lock,
    // and with it every other controller's takeover, for as long as it stays stalled.
    ...(options.idleInTransactionTimeoutMs ? { idle_in_transaction_session_timeout: options.idleInTransactionTimeoutMs } : {}),
  });
  // The pool drops a client whose idle connection broke; without a listener that event would end the process.
  pool.on("error", () => {});
  const db = new PrismaClient({
    adapter: new PrismaPg(pool, { disposeExternalPool: true, statementNameGenerator: (query) => preparedNames.get(query.sql) ?? "" }),
    transactionOptions: { maxWait: TRANSACTION_MAX_WAIT_MS },
  });
  pools.set(db, pool);
  return db;
}

/**
 * One statement sent straight to the client's `pg` pool (a read, or a write's RETURNING
 * rows), as `pg` types its columns (uuid and enums as text, timestamptz as Date, int8 as
 * text). On the dashboard's hottest reads (`runs.list`, `runs.count`) and the
 * teardowns' final write, Prisma's `$queryRaw` cost 0.2–0.4 ms on top of a statement of
 * under 1 ms. Inside a transaction (a client without a pool), or after
 * `$disconnect` ended the pool, it is `$queryRaw`. With `isoTimestamps`, timestamptz columns
 * come as the ISO strings `Date.prototype.toISOString` prints, in both paths.
 */
export async function readRows<T extends object>(db: Db | Prisma.TransactionClient, sql: Prisma.Sql, options: { isoTimestamps?: boolean } = {}): Promise<T[]> {
  const pool = pools.get(db as Db);
  if (!pool || pool.ended) {
    const rows = await db.$queryRaw<T[]>(sql);
    return options.isoTimestamps ? rows.map(isoDates) : rows;
  }
  const types = options.isoTimestamps ? ISO_TIMESTAMPS : undefined;
  return (await pool.query<T>({ name: preparedNames.get(sql.text), text: sql.text, values: sql.values, ...(types ? { types } : {}) })).rows;
}

function isoDates<T extends object>(row: T): T {
  const out = { ...row } as Record<string, unknown>;
  for (const [k, v] of Object.entries(out)) if (v instanceof Date) out[k] = v.toISOString();
  return out as T;
}

export * from "./generated/client";
