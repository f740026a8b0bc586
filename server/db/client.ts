import { PrismaPg } from "@prisma/adapter-pg";
import pg from "pg";
import { PrismaClient, type Prisma } from "./generated/client";

export type Db = PrismaClient;

/** Each client's own pool, for `readRows` (a transaction client has none). */
const pools = new WeakMap<Db, pg.Pool>();

export function createDb(url: string, options: { max?: number } = {}): Db {
  const pool = new pg.Pool({ connectionString: url, max: options.max ?? 10 });
  // The pool drops a client whose idle connection broke; without a listener that event would end the process.
  pool.on("error", () => {});
  const db = new PrismaClient({ adapter: new PrismaPg(pool, { disposeExternalPool: true }) });
  pools.set(db, pool);
  return db;
}

/**
 * One read statement sent straight to the client's `pg` pool, as `pg` types its columns
 * (uuid and enums as text, timestamptz as Date, int8 as text). Issue 13: on the dashboard's
 * hottest reads (`runs.list`, `runs.count`) Prisma's `$queryRaw` cost 0.2–0.4 ms on top of a
 * statement of under 1 ms. Inside a transaction (a client without a pool), or after
 * `$disconnect` ended the pool, it is `$queryRaw`.
 */
export async function readRows<T extends object>(db: Db | Prisma.TransactionClient, sql: Prisma.Sql): Promise<T[]> {
  const pool = pools.get(db as Db);
  if (!pool || pool.ended) return db.$queryRaw<T[]>(sql);
  return (await pool.query<T>(sql.text, sql.values)).rows;
}

export * from "./generated/client";
