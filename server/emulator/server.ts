import crypto from "node:crypto";
import fs from "node:fs";
import http, { STATUS_CODES } from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { openDatabase } from "../db/embedded";
import { readEnv } from "../env";
import { adminApi } from "./admin-api";
import { handOverAutoStop, stopReaper } from "./reaper";
import { createContext, DEFAULT_SERVER_WAIT_MS, DEFAULT_SNAPSHOTS_WITHOUT_NODE, DEFAULT_TOOLBOX_GONE, DEFAULT_TRANSITION_MS, type DuplicateNames, type EmulatorConfig, type ToolboxGone, type TransitionMs } from "./context";
import { authorize, decodeSegment, HttpError, reply, replyHtml } from "./http";
import { startAutoStopSweeper } from "./lifecycle";
import { sandboxApi } from "./sandbox-api";
import { killSandboxProcesses } from "./sandbox-host";
import { EmulatorStore } from "./store";
import { toolboxApi } from "./toolbox-api";

/**
 * The provider emulator, a local Daytona: the subset of Daytona's REST API that
 * server/providers/daytona.ts uses (DAYTONA.md, `sandbox-api.ts`), the toolbox API per sandbox
 * (docs/daytona.md "The toolbox", `toolbox-api.ts`) running real commands in a per-sandbox directory on this host,
 * fault injection and an admin API (`admin-api.ts`), auto-stop (`lifecycle.ts`). One
 * `node:http` server on loopback composing them; sandbox records and faults in PostgreSQL
 * (`store.ts`).
 */

export interface EmulatorOptions {
  /** 0 picks a free port. */
  port: number;
  host?: string;
  /** The emulator's own database (created when missing). */
  databaseUrl: string;
  /** Accepted Bearer keys. */
  apiKeys?: string[];
  duplicateNames?: DuplicateNames;
  destroyedRetentionMs?: number;
  /** How long each transitional state lasts (creating, starting, stopping, destroying); 0 skips it. */
  transitionMs?: Partial<TransitionMs>;
  /**
   * How long one minute of `autoStopInterval` lasts here (Daytona: 60 000 ms). Tests set it
   * small so a sandbox with `autoStopInterval: 1` stops after that many ms without activity.
   */
  autoStopMinuteMs?: number;
  /** What the toolbox answers for a deleted sandbox, and after how long (default: 401 after 2 min). */
  toolboxGone?: Partial<ToolboxGone>;
  /** How long a create or start waits for `started` before it answers (default Daytona's 30 s). */
  serverWaitMs?: number;
  /**
   * Where sandboxes live on the host (`<dataDir>/sandboxes/<id>`). Unset: a directory under
   * the OS temp dir named after the database, so a restart on the same database finds them.
   */
  dataDir?: string;
  log?: (line: string) => void;
  /** A request that failed unexpectedly (a 500), with its stack; `log` when unset. */
  logError?: (line: string) => void;
  /** Sees every request (method and path with query), e.g. to check what a client sends. */
  onRequest?: (method: string, pathAndQuery: string) => void;
}

export interface EmulatorHandle {
  url: string;
  port: number;
  /** Base of the toolbox proxy (`{url}/toolbox`). */
  toolboxUrl: string;
  store: EmulatorStore;
  dataDir: string;
  /** Kills every process of every sandbox (tests; a real emulator leaves runners running). */
  killAllProcesses(): Promise<number>;
  /** Toolbox calls that count as activity still being answered for a sandbox (tests: a killed controller's long poll ends on its own). */
  toolboxCallsInFlight(sandboxId: string): number;
  /** Runtime settings (also settable with `POST /admin/config`). */
  config: EmulatorConfig;
  close(): Promise<void>;
  /** Before a graceful stop: the started sandboxes' auto-stop goes on in a detached reaper while the emulator is down. */
  handOverAutoStop(): Promise<{ sandboxes: number; pid: number | null }>;
}

export const DEFAULT_API_KEY = "emulator-key";

export async function startEmulator(options: EmulatorOptions): Promise<EmulatorHandle> {
  const log = options.log ?? (() => {});
  const logError = options.logError ?? log;
  // Creates the database when it does not exist yet.
  await openDatabase({ env: readEnv({ DATABASE_URL: options.databaseUrl }) });
  const store = new EmulatorStore(options.databaseUrl, { destroyedRetentionMs: options.destroyedRetentionMs ?? 0 });
  await store.migrate();

  const dataDir = path.resolve(
    options.dataDir ?? path.join(os.tmpdir(), "runwarden-emulator", crypto.createHash("sha256").update(options.databaseUrl).digest("hex").slice(0, 16)),
  );
  fs.mkdirSync(dataDir, { recursive: true });
  // This emulator does the auto-stop now: a reaper the last one left goes.
  stopReaper(dataDir);
  const config: EmulatorConfig = {
    duplicateNames: options.duplicateNames ?? "conflict",
    destroyedRetentionMs: options.destroyedRetentionMs ?? 0,
    transitionMs: { ...DEFAULT_TRANSITION_MS, ...(options.transitionMs ?? {}) },
    autoStopMinuteMs: options.autoStopMinuteMs ?? 60_000,
    toolboxGone: { ...DEFAULT_TOOLBOX_GONE, ...(options.toolboxGone ?? {}) },
    serverWaitMs: options.serverWaitMs ?? DEFAULT_SERVER_WAIT_MS,
    snapshotsWithoutNode: [...DEFAULT_SNAPSHOTS_WITHOUT_NODE],
    lookupCacheMs: 0,
    listLagMs: 0,
  };
  const apiKeys = new Set(options.apiKeys?.length ? options.apiKeys : [DEFAULT_API_KEY]);
  const host = options.host ?? "127.0.0.1";
  const closing = new AbortController();
  let baseUrl = "";
  const ctx = createContext({ store, config, dataDir, log, baseUrl: () => baseUrl, closing: closing.signal });

  const server = http.createServer((req, res) => {
    void handle(req, res).catch((err: unknown) => {
      const e = err instanceof HttpError ? err : null;
      if (!e) logError(`emulator: ${req.method} ${req.url} failed: ${(err as Error)?.stack ?? String(err)}`);
      const status = e?.status ?? 500;
      const message = e?.message ?? "internal emulator error";
      const pathname = (req.url ?? "/").split("?")[0] ?? "/";
      if (e?.html) return replyHtml(res, status, e.html);
      // The toolbox answers {statusCode, message, code}; the REST API Nest's shape, no `code`.
      if (pathname.startsWith("/toolbox/")) reply(res, status, { statusCode: status, message, code: e?.code ?? "internal" }, e?.headers);
      else reply(res, status, { path: pathname, timestamp: new Date().toISOString(), statusCode: status, error: STATUS_CODES[status] ?? "Error", message }, e?.headers);
    });
  });

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://emulator.invalid");
    const method = req.method ?? "GET";
    options.onRequest?.(method, `${url.pathname}${url.search}`);

    if (method === "GET" && url.pathname === "/health") return reply(res, 200, { ok: true });
    // The key first: nobody without it learns anything, not even how a path is read.
    authorize(req, apiKeys);
    const parts = url.pathname.split("/").filter(Boolean).map(decodeSegment);
    // Transitions end lazily (and by the sweeper): every answer sees the states as of now. A
    // GET or DELETE of one sandbox settles in its own lookup (sandbox-api.ts), one statement less.
    const ownLookup = parts[0] === "sandbox" && parts.length === 2 && (method === "GET" || method === "DELETE");
    if (!ownLookup) await store.settle(new Date());

    const [root, a] = parts;
    if (root === "sandbox") {
      const answer = await sandboxApi(ctx, parts, method, url, req);
      if (answer !== null) return reply(res, 200, answer);
    }
    if (root === "toolbox" && a) return toolboxApi(ctx, a, parts.slice(2).join("/"), method, url, req, res);
    if (root === "admin") return reply(res, 200, await adminApi(ctx, parts.slice(1), method, url, req));
    throw new HttpError(404, "not_found", `no route for ${method} ${url.pathname}`);
  }

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  baseUrl = `http://${host.includes(":") ? `[${host}]` : host}:${port}`;
  const stopSweeper = startAutoStopSweeper(ctx);

  let closed: Promise<void> | null = null;
  return {
    url: baseUrl,
    port,
    toolboxUrl: `${baseUrl}/toolbox`,
    store,
    dataDir,
    async killAllProcesses() {
      let n = 0;
      for (const r of await store.all(true)) n += await killSandboxProcesses(ctx.hostOf(r));
      return n;
    },
    toolboxCallsInFlight: (sandboxId) => ctx.inFlight.get(sandboxId) ?? 0,
    config,
    handOverAutoStop: () => handOverAutoStop(ctx),
    close() {
      closed ??= (async () => {
        closing.abort();
        stopSweeper();
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        });
        await store.close().catch(() => {});
      })();
      return closed;
    },
  };
}
