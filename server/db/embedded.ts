import pg from "pg";
import type { Env } from "../env";
import { ClusterError, ensureCluster, stopCluster } from "./cluster";
import { databaseOf, hostOf, withDatabase } from "./url";

/**
 * Brings up the database Runwarden talks to: the server named by DATABASE_URL, or an
 * embedded PostgreSQL under `<data dir>/pg` (reused when it is already running, for
 * example after a SIGKILLed parent left it behind).
 */

export { EMBEDDED_PASSWORD, EMBEDDED_USER } from "./cluster";
export const DEFAULT_DATABASE = "runwarden";

export class DatabaseUnavailableError extends Error {
  override name = "DatabaseUnavailableError";
}

export interface DatabaseHandle {
  /** URL of the application database (exists, reachable). */
  url: string;
  /** URL of the server's maintenance database, for creating and dropping databases. */
  adminUrl: string;
  embedded: boolean;
  /** True when this process started the server (or adopted one left behind) and so must stop it. */
  startedHere: boolean;
  /**
   * Stops an embedded server this process started (or adopted), unless others still use it.
   * `graceMs`: how long to wait for other connections to end first — the backends of a process
   * that has just exited take a moment to go, and would otherwise keep the server running.
   */
  stop(options?: { graceMs?: number }): Promise<void>;
}

type Log = (line: string) => void;

/**
 * `adoptLeftover`: a running server of this data directory that nobody is connected to was left
 * by a process that died without stopping it (`npm start` SIGKILLed): it is reused, and this
 * process stops it as if it had started it. One that others still use is only reused.
 */
export async function openDatabase(options: { env: Env; log?: Log; database?: string; adoptLeftover?: boolean }): Promise<DatabaseHandle> {
  const { env } = options;
  const log = options.log ?? (() => {});
  if (env.DATABASE_URL) {
    const url = env.DATABASE_URL;
    await ensureDatabaseExists(url);
    return { url, adminUrl: withDatabase(url, "postgres"), embedded: false, startedHere: false, stop: async () => {} };
  }
  const server = await startEmbedded({ env, log, adoptLeftover: options.adoptLeftover ?? false });
  const url = withDatabase(server.adminUrl, options.database ?? DEFAULT_DATABASE);
  await ensureDatabaseExists(url);
  return { url, adminUrl: server.adminUrl, embedded: true, startedHere: server.startedHere, stop: server.stop };
}

/** Connects once, with a bound, and turns connection failures into one readable line. */
export async function probe(url: string, timeoutMs = 5000): Promise<void> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: timeoutMs });
  // A failed connect can also emit 'error' later; it must not crash the process.
  client.on("error", () => {});
  try {
    await client.connect();
    await client.query("select 1");
  } finally {
    await client.end().catch(() => {});
  }
}

export function explainConnectError(url: string, err: unknown): string {
  const e = err as { code?: string; message?: string };
  const what = e.code ? `${e.code}${e.message ? ` (${e.message})` : ""}` : (e.message ?? String(err));
  return `cannot connect to PostgreSQL at ${hostOf(url)}: ${what.replaceAll(url, hostOf(url))}`;
}

async function ensureDatabaseExists(url: string): Promise<void> {
  try {
    await probe(url);
    return;
  } catch (err) {
    if ((err as { code?: string }).code !== "3D000") {
      throw new DatabaseUnavailableError(explainConnectError(url, err));
    }
  }
  // 3D000: the server is there but the database is not; create it.
  const admin = new pg.Client({ connectionString: withDatabase(url, "postgres"), connectionTimeoutMillis: 5000 });
  admin.on("error", () => {});
  try {
    await admin.connect();
    await admin.query(`CREATE DATABASE ${pg.escapeIdentifier(databaseOf(url))}`);
  } catch (err) {
    // 42P04: another process created it first.
    if ((err as { code?: string }).code !== "42P04") {
      throw new DatabaseUnavailableError(explainConnectError(url, err));
    }
  } finally {
    await admin.end().catch(() => {});
  }
}

async function startEmbedded({ env, log, adoptLeftover }: { env: Env; log: Log; adoptLeftover: boolean }) {
  let cluster;
  try {
    cluster = await ensureCluster({ dataRoot: env.RUNWARDEN_DATA_DIR, port: env.RUNWARDEN_PG_PORT, log });
  } catch (err) {
    if (err instanceof ClusterError) throw new DatabaseUnavailableError(err.message);
    throw err;
  }
  const { adminUrl, dataDir } = cluster;
  if (!cluster.startedHere) {
    if (!adoptLeftover || (await otherClients(adminUrl)) > 0) return { adminUrl, startedHere: false, stop: async () => {} };
    log("embedded PostgreSQL left running by a start that did not stop it: reused, and stopped with this one");
  }
  const stop = async (options: { graceMs?: number } = {}) => {
    // Another process that reused this server (npm start, a wave, a second CLI) may
    // still be working on it: then it is left running for them.
    let others = await otherClients(adminUrl);
    for (const deadline = Date.now() + (options.graceMs ?? 0); others > 0 && Date.now() < deadline; others = await otherClients(adminUrl)) {
      await new Promise((r) => setTimeout(r, 200));
    }
    if (others > 0) {
      log(`embedded PostgreSQL left running: ${others} other connection(s) still use it`);
      return;
    }
    await stopCluster(dataDir);
    log("embedded PostgreSQL stopped");
  };
  return { adminUrl, startedHere: true, stop };
}

async function otherClients(adminUrl: string): Promise<number> {
  const client = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 2000 });
  client.on("error", () => {});
  try {
    await client.connect();
    const { rows } = await client.query<{ n: string }>(
      "SELECT count(*) AS n FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()",
    );
    return Number(rows[0]?.n ?? 0);
  } catch {
    return 0; // unreachable: nothing to protect, and stop() copes with a server already gone
  } finally {
    await client.end().catch(() => {});
  }
}

