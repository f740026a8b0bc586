import crypto from "node:crypto";
import fs from "node:fs";
import http, { STATUS_CODES } from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { z } from "zod";
import { openDatabase } from "../db/embedded";
import { readEnv } from "../env";
import { RUNNER_STATE_PATH, RunnerStateSchema } from "../providers/runner";
import { applicableRules, FaultRuleInputSchema, subjectOf, type FaultKind, type FaultPoint, type FaultRule, type FaultSubject } from "./faults";
import {
  ensureSandboxDirs,
  execute,
  freePort,
  killSandboxProcesses,
  listFiles,
  resolveInSandbox,
  SANDBOX_MARKER,
  sandboxHost,
  startSquatter,
  type SandboxHost,
} from "./sandbox-host";
import { EmulatorStore, TRANSITIONS, type Queryable, type SandboxRow, type SortKey } from "./store";

/**
 * The provider emulator, a local Daytona: the subset of Daytona's REST API that
 * server/providers/daytona.ts uses (DAYTONA.md), the toolbox API per sandbox (RUNNER.md)
 * running real commands in a per-sandbox directory on this host, fault injection and an
 * admin API. One `node:http` server on loopback; sandbox records and faults in PostgreSQL.
 */

export type DuplicateNames = "conflict" | "allow";

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
  /**
   * Where sandboxes live on the host (`<dataDir>/sandboxes/<id>`). Unset: a directory under
   * the OS temp dir named after the database, so a restart on the same database finds them.
   */
  dataDir?: string;
  log?: (line: string) => void;
  /** Sees every request (method and path with query), e.g. to check what a client sends. */
  onRequest?: (method: string, pathAndQuery: string) => void;
}

export interface TransitionMs {
  create: number;
  start: number;
  stop: number;
  destroy: number;
}

export const DEFAULT_TRANSITION_MS: TransitionMs = { create: 150, start: 100, stop: 100, destroy: 100 };

export interface EmulatorHandle {
  url: string;
  port: number;
  /** Base of the toolbox proxy (`{url}/toolbox`). */
  toolboxUrl: string;
  store: EmulatorStore;
  dataDir: string;
  /** Kills every process of every sandbox (tests; a real emulator leaves runners running). */
  killAllProcesses(): Promise<number>;
  /** Runtime settings (also settable with `POST /admin/config`). */
  config: EmulatorConfig;
  close(): Promise<void>;
}

export interface EmulatorConfig {
  duplicateNames: DuplicateNames;
  destroyedRetentionMs: number;
  transitionMs: TransitionMs;
  autoStopMinuteMs: number;
}

export const DEFAULT_API_KEY = "emulator-key";
const ORGANIZATION_ID = "emulator-org";
const MAX_BODY = 64 * 1024 * 1024;
const TOOLBOX_VERSION = "0.190.0-runwarden-emulator";

/** `code` is sent only by the toolbox; Daytona's REST API errors carry none (RUNNER.md). */
class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

const CHANGING = new Set(Object.keys(TRANSITIONS));
const SORT_KEYS: readonly SortKey[] = ["createdAt", "updatedAt", "lastActivityAt", "name"];

const LabelsSchema = z.record(z.string(), z.string());
const CreateSchema = z.object({
  name: z.string().min(1).max(255).optional(),
  labels: LabelsSchema.optional(),
  env: z.record(z.string(), z.string()).optional(),
  cpu: z.number().positive().optional(),
  memory: z.number().positive().optional(),
  disk: z.number().positive().optional(),
  autoStopInterval: z.number().int().min(0).optional(),
});
const PlantSchema = CreateSchema.extend({
  id: z.string().min(1).optional(),
  state: z.enum(["started", "stopped"]).optional(),
  createdAt: z.iso.datetime({ offset: true }).optional(),
  files: z.record(z.string(), z.string()).optional(),
  runnerState: RunnerStateSchema.optional(),
});
const ExecuteSchema = z.object({
  command: z.string().min(1),
  cwd: z.string().optional(),
  envs: z.record(z.string(), z.string()).optional(),
  timeout: z.number().int().min(0).optional(),
});
const ConfigSchema = z.object({
  duplicateNames: z.enum(["conflict", "allow"]).optional(),
  destroyedRetentionMs: z.number().int().min(0).optional(),
  transitionMs: z.object({ create: z.number().int().min(0), start: z.number().int().min(0), stop: z.number().int().min(0), destroy: z.number().int().min(0) }).partial().optional(),
  autoStopMinuteMs: z.number().int().min(1).optional(),
});

export async function startEmulator(options: EmulatorOptions): Promise<EmulatorHandle> {
  const log = options.log ?? (() => {});
  // Creates the database when it does not exist yet.
  await openDatabase({ env: readEnv({ DATABASE_URL: options.databaseUrl }) });
  const store = new EmulatorStore(options.databaseUrl, { destroyedRetentionMs: options.destroyedRetentionMs ?? 0 });
  await store.migrate();

  const dataDir = path.resolve(
    options.dataDir ?? path.join(os.tmpdir(), "runwarden-emulator", crypto.createHash("sha256").update(options.databaseUrl).digest("hex").slice(0, 16)),
  );
  fs.mkdirSync(dataDir, { recursive: true });
  const config: EmulatorConfig = {
    duplicateNames: options.duplicateNames ?? "conflict",
    destroyedRetentionMs: options.destroyedRetentionMs ?? 0,
    transitionMs: { ...DEFAULT_TRANSITION_MS, ...(options.transitionMs ?? {}) },
    autoStopMinuteMs: options.autoStopMinuteMs ?? 60_000,
  };
  /** Toolbox calls in progress per sandbox: a running turn keeps its sandbox alive. */
  const inFlight = new Map<string, number>();
  const apiKeys = new Set(options.apiKeys?.length ? options.apiKeys : [DEFAULT_API_KEY]);
  const host = options.host ?? "127.0.0.1";
  const closing = new AbortController();
  let baseUrl = "";

  const server = http.createServer((req, res) => {
    void handle(req, res).catch((err: unknown) => {
      const e = err instanceof HttpError ? err : null;
      if (!e) log(`emulator: ${req.method} ${req.url} failed: ${(err as Error)?.stack ?? String(err)}`);
      const status = e?.status ?? 500;
      const message = e?.message ?? "internal emulator error";
      const pathname = (req.url ?? "/").split("?")[0] ?? "/";
      // The toolbox answers {statusCode, message, code}; the REST API Nest's shape, no `code`.
      if (pathname.startsWith("/toolbox/")) reply(res, status, { statusCode: status, message, code: e?.code ?? "internal" });
      else reply(res, status, { path: pathname, timestamp: new Date().toISOString(), statusCode: status, error: STATUS_CODES[status] ?? "Error", message });
    });
  });

  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      if (ms <= 0 || closing.signal.aborted) return resolve();
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        closing.signal.removeEventListener("abort", done);
        resolve();
      }
      closing.signal.addEventListener("abort", done, { once: true });
    });

  /** Applies matching latency rules, then returns the first rule of `kind` (its use taken), if any. */
  async function faultFor(point: FaultPoint, subject: FaultSubject, kind: FaultKind | null): Promise<FaultRule | null> {
    const rules = await store.faults();
    for (const rule of applicableRules(rules, point, subject, "latency")) {
      if (rule.fault.kind === "latency" && (await store.consumeFault(rule.id))) await sleep(rule.fault.ms);
    }
    if (kind === null || kind === "latency") return null;
    for (const rule of applicableRules(rules, point, subject, kind)) {
      if (await store.consumeFault(rule.id)) return rule;
    }
    return null;
  }

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://emulator.invalid");
    const method = req.method ?? "GET";
    options.onRequest?.(method, `${url.pathname}${url.search}`);

    if (method === "GET" && url.pathname === "/health") return reply(res, 200, { ok: true });
    // The key first: nobody without it learns anything, not even how a path is read (issue 16.8).
    authorize(req, apiKeys);
    const parts = url.pathname.split("/").filter(Boolean).map(decodeSegment);
    // Transitions end lazily (and by the sweeper): every answer sees the states as of now.
    await store.settle(new Date());

    const [root, a, b] = parts;
    if (root === "sandbox") {
      if (parts.length === 1 && method === "POST") return reply(res, 200, await createSandbox(await readJson(req, CreateSchema)));
      if (parts.length === 1 && method === "GET") return reply(res, 200, await listSandboxes(url));
      if (a && parts.length === 2 && method === "GET") return reply(res, 200, await sandboxOp(a, "get"));
      if (a && parts.length === 2 && method === "DELETE") return reply(res, 200, await sandboxOp(a, "delete"));
      if (a && parts.length === 3 && b === "start" && method === "POST") return reply(res, 200, await sandboxOp(a, "start"));
      if (a && parts.length === 3 && b === "stop" && method === "POST") return reply(res, 200, await sandboxOp(a, "stop"));
      if (a && parts.length === 3 && b === "toolbox-proxy-url" && method === "GET") {
        await requireSandbox(a);
        return reply(res, 200, { url: `${baseUrl}/toolbox` });
      }
    }
    if (root === "toolbox" && a) return toolbox(a, parts.slice(2).join("/"), method, url, req, res);
    if (root === "admin") return admin(parts.slice(1), method, url, req, res);
    throw new HttpError(404, "not_found", `no route for ${method} ${url.pathname}`);
  }

  // ---- Daytona REST subset -------------------------------------------------------------

  async function createSandbox(body: z.infer<typeof CreateSchema>) {
    const arrived = Date.now();
    const id = crypto.randomUUID();
    const name = body.name ?? id;
    const labels = body.labels ?? {};
    const late = await faultFor("create", subjectOf(name, labels), "late");
    const delayMs = late?.fault.kind === "late" ? late.fault.delayMs : 0;
    // Stored now, visible from arrival + delay: the caller may abort, the sandbox still appears.
    const visibleAt = new Date(arrived + delayMs);
    // Daytona answers `creating`; toolbox calls work once it is `started`.
    const createMs = config.transitionMs.create;
    const row = await store.transaction(async (tx) => {
      await tx.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`name:${name}`]);
      if (config.duplicateNames === "conflict" && (await store.nameTaken(name, tx))) {
        throw new HttpError(409, "conflict", `Sandbox with name ${name} already exists`);
      }
      return store.insert(
        {
          id,
          name,
          labels,
          env: body.env ?? {},
          cpu: body.cpu ?? 1,
          memory: body.memory ?? 1,
          disk: body.disk ?? 3,
          state: createMs > 0 ? "creating" : "started",
          transitionUntil: createMs > 0 ? new Date(visibleAt.getTime() + createMs) : null,
          autoStopInterval: body.autoStopInterval ?? 15,
          createdAt: visibleAt,
          visibleAt,
          ingressPort: await freePort(),
        },
        tx,
      );
    });
    ensureSandboxDirs(hostOf(row));
    if (delayMs > 0) {
      log(`emulator: create ${name} held ${delayMs} ms (late fault)`);
      await sleep(visibleAt.getTime() - Date.now());
    }
    return toApi(row);
  }

  async function listSandboxes(url: URL) {
    let labels: Record<string, string> = {};
    const raw = url.searchParams.get("labels");
    if (raw !== null) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(raw);
      } catch {
        throw new HttpError(400, "bad_request", "labels must be a JSON object of string values");
      }
      const ok = LabelsSchema.safeParse(parsed);
      if (!ok.success) throw new HttpError(400, "bad_request", "labels must be a JSON object of string values");
      labels = ok.data;
    }
    const limit = intParam(url, "limit", 100, 1, 200);
    const sortParam = url.searchParams.get("sort") ?? "lastActivityAt";
    const sort = SORT_KEYS.find((k) => k === sortParam);
    if (!sort) throw new HttpError(400, "bad_request", `sort must be one of ${SORT_KEYS.join(", ")}`);
    const orderParam = url.searchParams.get("order") ?? "desc";
    if (orderParam !== "asc" && orderParam !== "desc") throw new HttpError(400, "bad_request", "order must be asc or desc");
    const after = decodeCursor(url.searchParams.get("cursor"));
    await faultFor("list", subjectOf(null, labels), null);
    const rows = await store.list(
      {
        labels,
        states: url.searchParams.getAll("states"),
        namePrefix: url.searchParams.get("name") || null,
        idPrefix: url.searchParams.get("id") || null,
        sort,
        order: orderParam,
        after,
        limit: limit + 1,
        includeDestroyed: url.searchParams.get("includeErroredDeleted") === "true",
      },
      new Date(),
    );
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return { items: page.map(toApi), nextCursor: rows.length > limit && last ? encodeCursor(sortValue(last, sort), last.id) : null };
  }

  async function requireSandbox(idOrName: string, db?: Queryable, lock = false): Promise<SandboxRow> {
    const row = await store.find(idOrName, new Date(), db, lock);
    if (!row) throw new HttpError(404, "not_found", `Sandbox with ID or name ${idOrName} not found`);
    return row;
  }

  async function sandboxOp(idOrName: string, op: "get" | "delete" | "start" | "stop") {
    const found = await store.find(idOrName, new Date());
    await faultFor("sandbox", found ? subjectOf(found.name, found.labels) : subjectOf(idOrName, {}), null);
    if (op === "get") return toApi(await requireSandbox(idOrName));
    const out = await store.transaction(async (tx) => {
      const row = await requireSandbox(idOrName, tx, true);
      const now = new Date();
      const ms = config.transitionMs;
      const until = (d: number) => (d > 0 ? new Date(now.getTime() + d) : null);
      if (row.destroyed_at) {
        if (op === "delete") throw new HttpError(404, "not_found", `Sandbox ${row.id} is already destroyed`);
        throw new HttpError(400, "bad_request", `Sandbox ${row.id} is destroyed`);
      }
      // Daytona refuses a lifecycle change while one is under way.
      if (CHANGING.has(row.state)) throw new HttpError(409, "conflict", "Sandbox state change in progress");
      switch (op) {
        case "delete":
          // Renamed at once: GET by name is a 404, the name is free; GET by id shows `destroying`.
          return toApi(
            await store.setState(row.id, ms.destroy > 0 ? "destroying" : "destroyed", "destroyed", now, tx, {
              destroyed: ms.destroy <= 0,
              transitionUntil: until(ms.destroy),
              name: `DESTROYED_${row.name}_${now.getTime()}`,
            }),
          );
        case "start":
          if (row.state === "started") return toApi(row);
          return toApi(await store.setState(row.id, ms.start > 0 ? "starting" : "started", "started", now, tx, { transitionUntil: until(ms.start) }));
        case "stop":
          if (row.state !== "started") throw new HttpError(400, "bad_request", `Sandbox ${row.id} is ${row.state}, not started`);
          return toApi(await store.setState(row.id, ms.stop > 0 ? "stopping" : "stopped", "stopped", now, tx, { transitionUntil: until(ms.stop) }));
        default: {
          const never: never = op;
          return never;
        }
      }
    });
    // A stopped or deleted sandbox keeps no process running, detached ones included.
    if (op === "stop" || op === "delete") await killSandboxProcesses(hostOf(out));
    if (op === "delete") fs.rmSync(hostOf(out).root, { recursive: true, force: true });
    return out;
  }

  /**
   * Auto-stop (Daytona): a started sandbox without toolbox or lifecycle activity for
   * `autoStopInterval` minutes stops, its processes killed, even while they run. A toolbox
   * call still in progress (a turn being polled) is activity.
   */
  async function autoStop(): Promise<void> {
    const now = new Date();
    await store.settle(now);
    for (const idle of await store.idle(now, config.autoStopMinuteMs)) {
      if (inFlight.has(idle.id)) {
        await store.touch(idle.id, now);
        continue;
      }
      const stopped = await store.transaction(async (tx) => {
        await tx.query("SELECT 1 FROM emulator_sandbox WHERE id = $1 FOR UPDATE", [idle.id]);
        const row = await store.byId(idle.id, tx);
        // Re-checked under the lock: activity may have come in meanwhile.
        const last = row?.last_activity_at ?? row?.updated_at;
        if (!row || row.state !== "started" || row.destroyed_at || !last || last.getTime() !== (idle.last_activity_at ?? idle.updated_at).getTime()) return null;
        const ms = config.transitionMs.stop;
        return store.setState(row.id, ms > 0 ? "stopping" : "stopped", "stopped", now, tx, { transitionUntil: ms > 0 ? new Date(now.getTime() + ms) : null });
      });
      if (!stopped) continue;
      log(`emulator: ${stopped.name} auto-stopped after ${stopped.auto_stop_interval} min without activity`);
      await killSandboxProcesses(hostOf(stopped));
    }
  }

  const hostOf = (row: Pick<SandboxRow, "id">): SandboxHost => sandboxHost(dataDir, row.id);

  /** What a process in this sandbox sees: its HOME, the sandbox env, its ingress port. */
  function sandboxEnv(row: SandboxRow, host: SandboxHost): Record<string, string> {
    return {
      PATH: `${path.dirname(process.execPath)}:/usr/local/bin:/usr/bin:/bin`,
      HOME: host.home,
      USER: "daytona",
      LANG: "C.UTF-8",
      ...row.env,
      RUNWARDEN_INGRESS_PORT: String(row.ingress_port ?? 43127),
      [SANDBOX_MARKER]: host.root,
    };
  }

  // ---- The toolbox API (per sandbox, by id only) ------------------------------------------

  async function toolbox(sandboxId: string, route: string, method: string, url: URL, req: http.IncomingMessage, res: http.ServerResponse) {
    // The toolbox proxy resolves a sandbox by id only (RUNNER.md), never by name.
    const row = await store.byId(sandboxId);
    const now = Date.now();
    if (!row || row.destroyed_at || row.visible_at.getTime() > now) throw new HttpError(404, "not_found", `sandbox container ${sandboxId} not found`);
    const host = hostOf(row);
    if (row.state !== "started") throw new HttpError(400, "bad_request", `Sandbox ${row.id} is ${row.state}. Is the Sandbox started?`);
    ensureSandboxDirs(host);
    // A toolbox call is activity (unless the caller says not to); one in progress keeps the sandbox up.
    if (req.headers["x-daytona-skip-last-activity-update"] === "true") return toolboxRoute(row, host, route, method, url, req, res);
    await store.touch(row.id, new Date());
    inFlight.set(row.id, (inFlight.get(row.id) ?? 0) + 1);
    try {
      return await toolboxRoute(row, host, route, method, url, req, res);
    } finally {
      const n = (inFlight.get(row.id) ?? 1) - 1;
      if (n > 0) inFlight.set(row.id, n);
      else inFlight.delete(row.id);
      await store.touch(row.id, new Date()).catch(() => {});
    }
  }

  async function toolboxRoute(row: SandboxRow, host: SandboxHost, route: string, method: string, url: URL, req: http.IncomingMessage, res: http.ServerResponse) {
    if (method === "GET" && route === "version") return reply(res, 200, { version: TOOLBOX_VERSION });
    if (method === "GET" && route === "user-home-dir") return reply(res, 200, { dir: host.home });
    if (method === "GET" && route === "files/download") {
      await faultFor("files", subjectOf(row.name, row.labels, runIdOnDisk(host)), null);
      return download(host, url.searchParams.get("path"), res);
    }
    if (method === "POST" && route === "files/bulk-upload") return reply(res, 200, await bulkUpload(host, req));
    if (method === "POST" && route === "process/execute") return processExecute(row, host, await readJson(req, ExecuteSchema), res);
    throw new HttpError(404, "not_found", `no toolbox route for ${method} /${route}`);
  }

  function download(host: SandboxHost, rawPath: string | null, res: http.ServerResponse) {
    if (!rawPath) throw new HttpError(400, "bad_request", "path is required");
    const file = resolveInSandbox(host, rawPath);
    // Outside this sandbox's directory is another file system: there is no such file.
    if (!file) throw new HttpError(404, "not_found", `file ${rawPath} not found`);
    let content: Buffer;
    try {
      content = fs.readFileSync(file);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ENOENT" || code === "ENOTDIR") throw new HttpError(404, "not_found", `file ${rawPath} not found`);
      if (code === "EISDIR") throw new HttpError(400, "bad_request", `${rawPath} is a directory`);
      if (code === "EACCES") throw new HttpError(403, "forbidden", `permission denied: ${rawPath}`);
      throw err;
    }
    res.writeHead(200, { "content-type": "application/octet-stream", "content-length": content.length });
    res.end(content);
  }

  /** Multipart `files[i].path` + `files[i].file`; parent directories are created (not atomic, as in Daytona). */
  async function bulkUpload(host: SandboxHost, req: http.IncomingMessage) {
    const body = await readBody(req);
    const form = await new Request("http://emulator.invalid/", {
      method: "POST",
      headers: { "content-type": req.headers["content-type"] ?? "" },
      body: new Uint8Array(body),
    })
      .formData()
      .catch(() => {
        throw new HttpError(400, "bad_request", "expected a multipart/form-data body");
      });
    const paths = new Map<string, string>();
    const files = new Map<string, Blob>();
    for (const [key, value] of form.entries()) {
      const m = /^files\[(\d+)\]\.(path|file)$/.exec(key);
      if (!m?.[1]) continue;
      if (m[2] === "path" && typeof value === "string") paths.set(m[1], value);
      else if (m[2] === "file" && typeof value !== "string") files.set(m[1], value);
    }
    if (paths.size === 0) throw new HttpError(400, "bad_request", "no files[i].path in the upload");
    for (const [i, p] of paths) {
      const blob = files.get(i);
      if (!blob) throw new HttpError(400, "bad_request", `files[${i}].file is missing`);
      const target = resolveInSandbox(host, p);
      if (!target) throw new HttpError(403, "forbidden", `${p} is outside the sandbox`);
      fs.mkdirSync(path.dirname(target), { recursive: true });
      fs.writeFileSync(target, Buffer.from(await blob.arrayBuffer()));
    }
    return { uploaded: paths.size };
  }

  /** The run a call concerns, from the runner state on the sandbox (for fault matching). */
  function runIdOnDisk(host: SandboxHost): string | null {
    const file = resolveInSandbox(host, RUNNER_STATE_PATH);
    try {
      const v = JSON.parse(fs.readFileSync(file ?? "", "utf8")) as { runId?: unknown; lifecycle?: unknown };
      return typeof v.runId === "string" ? v.runId : null;
    } catch {
      return null;
    }
  }

  function lifecycleOnDisk(host: SandboxHost): string | null {
    const file = resolveInSandbox(host, RUNNER_STATE_PATH);
    try {
      const v = JSON.parse(fs.readFileSync(file ?? "", "utf8")) as { lifecycle?: unknown };
      return typeof v.lifecycle === "string" ? v.lifecycle : null;
    } catch {
      return null;
    }
  }

  async function processExecute(row: SandboxRow, host: SandboxHost, body: z.infer<typeof ExecuteSchema>, res: http.ServerResponse) {
    const env = sandboxEnv(row, host);
    const envs: Record<string, string> = { ...(body.envs ?? {}) };
    // Faults are real here: they change what runs in the sandbox, not the answer.
    const plain = body.command.replace(/'/g, "");
    const isStart = /runnerd\S*\s+start\b/.test(plain);
    const isSessionOpen = /\bctl\s+session-open\b/.test(plain);
    const startRun = /--run\s+(\S+)/.exec(plain)?.[1];
    const subject = subjectOf(row.name, row.labels, runIdOnDisk(host), startRun);
    let squatter: { release(): void } | null = null;
    if (isStart) {
      await faultFor("runner_start", subject, null);
      if (await firstFault("runner_start", subject, "bind_conflict")) {
        log(`emulator: squatter on ${row.name}'s ingress port ${row.ingress_port} (bind_conflict fault)`);
        squatter = await startSquatter(host, env, row.ingress_port ?? 43127);
      }
    } else if (isSessionOpen) {
      await faultFor("session_open", subject, null);
      // Only a session the runner would open is hit (its own preconditions come first).
      if (lifecycleOnDisk(host) === "connecting") {
        if (await firstFault("session_open", subject, "never_connect")) {
          log(`emulator: session command on ${row.name} hangs (never_connect fault)`);
          envs.RUNWARDEN_SESSION_COMMAND = `exec ${JSON.stringify(process.execPath)} -e "setInterval(() => {}, 1e9)"`;
        } else {
          const reject = await firstFault("session_open", subject, "reject");
          if (reject?.fault.kind === "reject") {
            const line = JSON.stringify({ providerFailure: reject.fault.providerFailure });
            envs.RUNWARDEN_SESSION_COMMAND = `printf '%s\\n' ${shellQuote(line)}; exit 1`;
          }
        }
      }
    } else {
      await faultFor("runner", subject, null);
    }
    try {
      const result = await execute(host, env, { command: body.command, cwd: body.cwd, envs, timeout: body.timeout });
      if (result.timedOut) throw new HttpError(408, "request_timeout", `command timed out after ${body.timeout ?? 360} s`);
      return reply(res, 200, { exitCode: result.exitCode, result: result.result });
    } finally {
      squatter?.release();
    }
  }

  /** Takes one use of the first applicable rule of `kind` (latency already applied). */
  async function firstFault(point: FaultPoint, subject: FaultSubject, kind: FaultKind): Promise<FaultRule | null> {
    for (const rule of applicableRules(await store.faults(), point, subject, kind)) {
      if (await store.consumeFault(rule.id)) return rule;
    }
    return null;
  }

  /** The runner process on a sandbox as the admin view shows it (from its state's identity). */
  function runnerProcessOf(host: SandboxHost): { state: "running" | "stopped" | "absent"; pid: number | null } {
    const file = resolveInSandbox(host, RUNNER_STATE_PATH);
    let pid: number | null = null;
    try {
      const v = JSON.parse(fs.readFileSync(file ?? "", "utf8")) as { process?: { pid?: unknown } };
      pid = typeof v.process?.pid === "number" ? v.process.pid : null;
    } catch {
      return { state: "absent", pid: null };
    }
    const running = pid !== null && fs.existsSync(`/proc/${pid}`) && !/\) [ZX] /.test(safeRead(`/proc/${pid}/stat`));
    return { state: running ? "running" : "stopped", pid };
  }

  // ---- Admin ---------------------------------------------------------------------------

  async function admin(parts: string[], method: string, url: URL, req: http.IncomingMessage, res: http.ServerResponse) {
    const [what, id] = parts;
    if (what === "sandboxes" && !id && method === "GET") {
      const rows = await store.all(url.searchParams.get("includeDestroyed") === "true");
      const now = Date.now();
      return reply(res, 200, {
        items: rows.map((r) => ({
          ...toApi(r),
          visibleAt: r.visible_at.toISOString(),
          materialised: r.visible_at.getTime() <= now,
          destroyedAt: r.destroyed_at?.toISOString() ?? null,
          runnerProcess: runnerProcessOf(hostOf(r)),
          ingressPort: r.ingress_port,
        })),
      });
    }
    if (what === "sandboxes" && id === undefined && method === "POST") return reply(res, 200, await plant(await readJson(req, PlantSchema)));
    if (what === "sandboxes" && id && parts[2] === "files" && method === "GET") {
      const row = await requireSandbox(id);
      return reply(res, 200, { home: hostOf(row).home, files: listFiles(hostOf(row).root) });
    }
    if (what === "faults" && !id && method === "GET") return reply(res, 200, { faults: await store.faults() });
    if (what === "faults" && !id && method === "POST") {
      const input = await readJson(req, FaultRuleInputSchema);
      const rule = await store.addFault(input);
      log(`emulator: fault ${rule.fault.kind} set for ${JSON.stringify(rule.match)}${rule.times ? ` (${rule.times}x)` : ""}`);
      return reply(res, 200, rule);
    }
    if (what === "faults" && method === "DELETE") return reply(res, 200, { deleted: await store.deleteFaults(id) });
    if (what === "reset" && method === "POST") {
      for (const r of await store.all(true)) await killSandboxProcesses(hostOf(r));
      await store.reset();
      return reply(res, 200, { ok: true });
    }
    if (what === "config" && method === "GET") return reply(res, 200, config);
    if (what === "config" && method === "POST") {
      const next = await readJson(req, ConfigSchema);
      if (next.duplicateNames) config.duplicateNames = next.duplicateNames;
      if (next.transitionMs) config.transitionMs = { ...config.transitionMs, ...next.transitionMs };
      if (next.autoStopMinuteMs !== undefined) config.autoStopMinuteMs = next.autoStopMinuteMs;
      if (next.destroyedRetentionMs !== undefined) {
        config.destroyedRetentionMs = next.destroyedRetentionMs;
        store.destroyedRetentionMs = next.destroyedRetentionMs;
      }
      return reply(res, 200, config);
    }
    throw new HttpError(404, "not_found", `no admin route for ${method} ${url.pathname}`);
  }

  /** Plants a sandbox directly (decoys, prepared runner states): no faults, same name rule. */
  async function plant(body: z.infer<typeof PlantSchema>) {
    const id = body.id ?? crypto.randomUUID();
    const name = body.name ?? id;
    const createdAt = body.createdAt ? new Date(body.createdAt) : new Date();
    const row = await store.transaction(async (tx) => {
      await tx.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`name:${name}`]);
      if (config.duplicateNames === "conflict" && (await store.nameTaken(name, tx))) {
        throw new HttpError(409, "conflict", `Sandbox with name ${name} already exists`);
      }
      const inserted = await store.insert(
        {
          id,
          name,
          labels: body.labels ?? {},
          env: body.env ?? {},
          cpu: body.cpu ?? 1,
          memory: body.memory ?? 1,
          disk: body.disk ?? 3,
          state: body.state ?? "started",
          createdAt,
          visibleAt: createdAt,
          // A planted sandbox (maybe "created" long ago) has just been touched.
          lastActivityAt: new Date(),
          ingressPort: await freePort(),
        },
        tx,
      );
      return (await store.byId(id, tx)) ?? inserted;
    });
    const host = hostOf(row);
    ensureSandboxDirs(host);
    const files: Record<string, string> = { ...(body.files ?? {}) };
    if (body.runnerState) files[RUNNER_STATE_PATH] = JSON.stringify(body.runnerState, null, 2);
    for (const [p, text] of Object.entries(files)) {
      const target = resolveInSandbox(host, p);
      if (!target) throw new HttpError(400, "bad_request", `${p} is outside the sandbox`);
      fs.mkdirSync(path.dirname(target), { recursive: true });
      fs.writeFileSync(target, text);
    }
    return toApi(row);
  }

  function toApi(row: SandboxRow) {
    const at = (d: Date) => d.toISOString();
    return {
      id: row.id,
      organizationId: ORGANIZATION_ID,
      name: row.name,
      snapshot: "runwarden-emulator",
      user: "daytona",
      env: row.env,
      labels: row.labels,
      public: false,
      networkBlockAll: false,
      kvm: false,
      target: "local",
      cpu: row.cpu,
      gpu: 0,
      memory: row.memory,
      disk: row.disk,
      state: row.state,
      desiredState: row.desired_state,
      errorReason: row.error_reason ?? undefined,
      autoStopInterval: row.auto_stop_interval,
      autoArchiveInterval: 0,
      autoDeleteInterval: -1,
      createdAt: at(row.created_at),
      updatedAt: at(row.updated_at),
      lastActivityAt: at(row.last_activity_at ?? row.updated_at),
      toolboxProxyUrl: `${baseUrl}/toolbox`,
    };
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

  let sweeping = false;
  const sweeper = setInterval(() => {
    if (sweeping) return;
    sweeping = true;
    void autoStop()
      .catch((err: unknown) => log(`emulator: auto-stop sweep failed: ${(err as Error)?.message ?? String(err)}`))
      .finally(() => {
        sweeping = false;
      });
  }, Math.min(1000, Math.max(25, Math.floor(config.autoStopMinuteMs / 10))));
  sweeper.unref();

  let closed: Promise<void> | null = null;
  return {
    url: baseUrl,
    port,
    toolboxUrl: `${baseUrl}/toolbox`,
    store,
    dataDir,
    async killAllProcesses() {
      let n = 0;
      for (const r of await store.all(true)) n += await killSandboxProcesses(hostOf(r));
      return n;
    },
    config,
    close() {
      closed ??= (async () => {
        closing.abort();
        clearInterval(sweeper);
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



/** Daytona's list cursor: base64 of `{sortValue, id}` (the last row of the page). */
function encodeCursor(sortValue: string, id: string): string {
  return Buffer.from(JSON.stringify({ sortValue, id })).toString("base64");
}

const CursorSchema = z.object({ sortValue: z.string(), id: z.string() });

function decodeCursor(raw: string | null): { sortValue: string; id: string } | null {
  if (raw === null || raw === "") return null;
  try {
    const parsed = CursorSchema.safeParse(JSON.parse(Buffer.from(raw, "base64").toString("utf8")));
    if (parsed.success) return parsed.data;
  } catch {
    // falls through to the 400
  }
  throw new HttpError(400, "bad_request", "invalid cursor");
}

function sortValue(row: SandboxRow, sort: SortKey): string {
  switch (sort) {
    case "createdAt":
      return row.created_at.toISOString();
    case "updatedAt":
      return row.updated_at.toISOString();
    case "lastActivityAt":
      return (row.last_activity_at ?? row.updated_at).toISOString();
    case "name":
      return row.name;
    default: {
      const never: never = sort;
      return never;
    }
  }
}

/** A path segment, percent-decoded; malformed encoding (`%ff`, `%E0%A4%A`) is the client's error. */
function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new HttpError(400, "bad_request", `malformed percent-encoding in path segment ${JSON.stringify(segment)}`);
  }
}

function authorize(req: http.IncomingMessage, keys: Set<string>) {
  const header = req.headers.authorization ?? "";
  const match = /^Bearer\s+(.+)$/i.exec(header);
  if (!match || !keys.has(match[1]?.trim() ?? "")) {
    throw new HttpError(401, "unauthorized", match ? "Invalid API key" : "Missing Authorization: Bearer <API key>");
  }
}

async function readJson<T>(req: http.IncomingMessage, schema: z.ZodType<T>): Promise<T> {
  const text = (await readBody(req)).toString("utf8").trim();
  let value: unknown = {};
  if (text) {
    try {
      value = JSON.parse(text);
    } catch {
      throw new HttpError(400, "bad_request", "request body is not JSON");
    }
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new HttpError(400, "bad_request", `${issue?.path.join(".") || "body"}: ${issue?.message ?? "invalid"}`);
  }
  return parsed.data;
}

function reply(res: http.ServerResponse, status: number, body: unknown) {
  // The caller may be gone (aborted create, closed connection): nothing to answer.
  if (res.headersSent || res.destroyed || res.writableEnded) return;
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

function intParam(url: URL, name: string, fallback: number, min: number, max: number): number {
  const raw = url.searchParams.get(name);
  if (raw === null || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) throw new HttpError(400, "bad_request", `${name} must be an integer from ${min} to ${max}`);
  return n;
}

function shellQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

function safeRead(file: string): string {
  try {
    return fs.readFileSync(file, "utf8");
  } catch {
    return "";
  }
}

async function readBody(req: http.IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY) throw new HttpError(413, "payload_too_large", "request body over 64 MiB");
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}
