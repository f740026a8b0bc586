import { env } from "../env";
import { createDb, type Db } from "./client";
import { DEFAULT_DATABASE, EMBEDDED_PASSWORD, EMBEDDED_USER } from "./embedded";

/**
 * The database URL a long-running process uses: DATABASE_URL, or the embedded server
 * that `npm start` (or any CLI) brought up under the data dir.
 */
export function databaseUrl(): string {
  return (
    env.DATABASE_URL ??
    `postgresql://${EMBEDDED_USER}:${EMBEDDED_PASSWORD}@127.0.0.1:${env.RUNWARDEN_PG_PORT}/${DEFAULT_DATABASE}`
  );
}

const globalForDb = globalThis as unknown as { runwardenDb?: Db };

/** One client per process (kept across Next's hot reloads in development). */
export function db(): Db {
  globalForDb.runwardenDb ??= createDb(databaseUrl());
  return globalForDb.runwardenDb;
}
