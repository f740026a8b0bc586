import { env } from "../env";
import { createDb, type Db } from "./client";
import { adminUrlFor, clusterPort } from "./cluster";
import { DEFAULT_DATABASE } from "./embedded";
import { withDatabase } from "./url";

/**
 * The database URL a long-running process uses: DATABASE_URL, or the embedded server
 * that `npm start` (or any CLI) brought up under the data dir.
 */
export function databaseUrl(): string {
  if (env.DATABASE_URL) return env.DATABASE_URL;
  const port = clusterPort({ dataRoot: env.RUNWARDEN_DATA_DIR, port: env.RUNWARDEN_PG_PORT });
  return withDatabase(adminUrlFor(port), DEFAULT_DATABASE);
}

const globalForDb = globalThis as unknown as { runwardenDb?: Db };

/** One client per process (kept across Next's hot reloads in development). */
export function db(): Db {
  globalForDb.runwardenDb ??= createDb(databaseUrl());
  return globalForDb.runwardenDb;
}
