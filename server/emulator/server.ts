import crypto from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { z } from "zod";
import { openDatabase } from "../db/embedded";
import { readEnv } from "../env";
import {
  bootstrapRestartPath,
  PROVIDER_STATE_PATH,
  RUNNER_INGRESS_PORT,
  RUNNER_ROOT,
  RUNNER_STATE_PATH,
  RunnerStateSchema,
  type RunnerState,
} from "../providers/runner";
import { applicableRules, FaultRuleInputSchema, subjectOf, type FaultKind, type FaultPoint, type FaultRule, type FaultSubject } from "./faults";
import * as model from "./runner-model";
import { EmulatorStore, type Queryable, type SandboxRow } from "./store";

/**
 * The provider emulator: the subset of Daytona's REST API that server/providers/daytona.ts
 * uses (DAYTONA.md), an emulated runner under the toolbox proxy, fault injection and an
 * admin API. One `node:http` server on loopback; state in PostgreSQL.
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
  log?: (line: string) => void;
}

export interface EmulatorHandle {
  url: string;
  port: number;
  /** Base of the toolbox proxy (`{url}/toolbox`). */
  toolboxUrl: string;
  store: EmulatorStore;
  /** Runtime settings (also settable with `POST /admin/config`). */
  config: { duplicateNames: DuplicateNames; destroyedRetentionMs: number };
  close(): Promise<void>;
}

export const DEFAULT_API_KEY = "emulator-key";
const ORGANIZATION_ID = "emulator-org";
const HOME = "/home/sandbox";
const MAX_BODY = 1024 * 1024;

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

const LabelsSchema = z.record(z.string(), z.string());
const CreateSchema = z.object({
  name: z.string().min(1).max(255).optional(),
  labels: LabelsSchema.optional(),
  env: z.record(z.string(), z.string()).optional(),
  cpu: z.number().positive().optional(),
  memory: z.number().positive().optional(),
  disk: z.number().positive().optional(),
});
const PlantSchema = CreateSchema.extend({
  id: z.string().min(1).optional(),
  state: z.enum(["started", "stopped"]).optional(),
  createdAt: z.iso.datetime({ offset: true }).optional(),
  files: z.record(z.string(), z.string()).optional(),
  runnerState: RunnerStateSchema.optional(),
  runnerProcess: z.object({ state: z.enum(["running", "stopped", "absent"]), pid: z.number().int().optional(), startedAt: z.string().optional() }).optional(),
});
const StartRunnerSchema = z.object({ runId: z.string().min(1), runnerInstanceId: z.string().min(1), sessionId: z.string().min(1) });
const TurnSchema = z.object({ seq: z.number().int().min(1) });
const ConfigSchema = z.object({
  duplicateNames: z.enum(["conflict", "allow"]).optional(),
  destroyedRetentionMs: z.number().int().min(0).optional(),
});

export async function startEmulator(options: EmulatorOptions): Promise<EmulatorHandle> {
  const log = options.log ?? (() => {});
  // Creates the database when it does not exist yet.
  await openDatabase({ env: readEnv({ DATABASE_URL: options.databaseUrl }) });
  const store = new EmulatorStore(options.databaseUrl, { destroyedRetentionMs: options.destroyedRetentionMs ?? 0 });
  await store.migrate();

  const config = { duplicateNames: options.duplicateNames ?? "conflict", destroyedRetentionMs: options.destroyedRetentionMs ?? 0 };
  const apiKeys = new Set(options.apiKeys?.length ? options.apiKeys : [DEFAULT_API_KEY]);
  const host = options.host ?? "127.0.0.1";
  const closing = new AbortController();
  let baseUrl = "";

  const server = http.createServer((req, res) => {
    void handle(req, res).catch((err: unknown) => {
      const e = err instanceof HttpError ? err : null;
      if (!e) log(`emulator: ${req.method} ${req.url} failed: ${(err as Error)?.stack ?? String(err)}`);
      reply(res, e?.status ?? 500, {
        message: e?.message ?? "internal emulator error",
        code: e?.code ?? "internal",
        statusCode: e?.status ?? 500,
        ...(e?.extra ?? {}),
      });
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

    if (method === "GET" && url.pathname === "/health") return reply(res, 200, { ok: true });
    // The key first: nobody without it learns anything, not even how a path is read (issue 16.8).
    authorize(req, apiKeys);
    const parts = url.pathname.split("/").filter(Boolean).map(decodeSegment);

    const [root, a, b, c] = parts;
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
    if (root === "toolbox" && a) {
      if (b === "files" && c === "download" && parts.length === 4 && method === "GET") return download(a, url.searchParams.get("path"), res);
      if (b === "runner" && c && parts.length === 4) return runnerOp(a, c, method, req, res);
    }
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
    const row = await store.transaction(async (tx) => {
      await tx.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`name:${name}`]);
      if (config.duplicateNames === "conflict" && (await store.nameTaken(name, tx))) {
        throw new HttpError(409, "conflict", `Sandbox with name ${name} already exists`);
      }
      return store.insert(
        { id, name, labels, env: body.env ?? {}, cpu: body.cpu ?? 1, memory: body.memory ?? 1, disk: body.disk ?? 3, state: "started", createdAt: visibleAt, visibleAt },
        tx,
      );
    });
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
    const cursor = url.searchParams.get("cursor");
    if (cursor !== null && !/^\d+$/.test(cursor)) throw new HttpError(400, "bad_request", "invalid cursor");
    await faultFor("list", subjectOf(null, labels), null);
    const rows = await store.list(
      {
        labels,
        states: url.searchParams.getAll("states"),
        afterSeq: cursor,
        limit: limit + 1,
        includeDestroyed: url.searchParams.get("includeErroredDeleted") === "true",
      },
      new Date(),
    );
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return { items: page.map(toApi), nextCursor: rows.length > limit && last ? last.seq : null };
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
    return store.transaction(async (tx) => {
      const row = await requireSandbox(idOrName, tx, true);
      const now = new Date();
      switch (op) {
        case "delete":
          if (row.destroyed_at) throw new HttpError(404, "not_found", `Sandbox ${row.id} is already destroyed`);
          return toApi(await store.setState(row.id, "destroyed", "destroyed", now, tx, { destroyed: true }));
        case "start":
          if (row.destroyed_at) throw new HttpError(400, "bad_request", `Sandbox ${row.id} is destroyed`);
          return toApi(await store.setState(row.id, "started", "started", now, tx));
        case "stop":
          if (row.destroyed_at) throw new HttpError(400, "bad_request", `Sandbox ${row.id} is destroyed`);
          return toApi(await store.setState(row.id, "stopped", "stopped", now, tx));
        default: {
          const never: never = op;
          return never;
        }
      }
    });
  }

  async function download(sandboxId: string, rawPath: string | null, res: http.ServerResponse) {
    if (!rawPath) throw new HttpError(400, "bad_request", "path is required");
    const row = await requireSandbox(sandboxId);
    await faultFor("files", subjectOf(row.name, row.labels), null);
    if (row.destroyed_at) throw new HttpError(404, "not_found", `Sandbox ${row.id} is destroyed`);
    const content = await store.readFile(row.id, resolvePath(rawPath));
    if (!content) throw new HttpError(404, "not_found", `file ${rawPath} not found`);
    res.writeHead(200, { "content-type": "application/octet-stream", "content-length": content.length });
    res.end(content);
  }

  // ---- The emulated runner -------------------------------------------------------------

  async function readState(sandboxId: string, db: Queryable): Promise<RunnerState | null> {
    const buf = await store.readFile(sandboxId, RUNNER_STATE_PATH, db);
    if (!buf) return null;
    // A planted file that is not a runner state is "no runner state" to the runner itself.
    let value: unknown;
    try {
      value = JSON.parse(buf.toString("utf8"));
    } catch {
      return null;
    }
    const parsed = RunnerStateSchema.safeParse(value);
    return parsed.success ? parsed.data : null;
  }

  const processOf = (row: SandboxRow): model.RunnerProcessRow => ({
    state: row.runner_process,
    pid: row.runner_pid,
    startedAt: row.runner_started_at ? row.runner_started_at.toISOString() : null,
  });

  async function runnerOp(sandboxId: string, op: string, method: string, req: http.IncomingMessage, res: http.ServerResponse) {
    const peek = await requireSandbox(sandboxId);
    const peekState = await readState(peek.id, store.pool);
    const startBody = op === "start" && method === "POST" ? await readJson(req, StartRunnerSchema) : null;
    const turnBody = op === "turn" && method === "POST" ? await readJson(req, TurnSchema) : null;
    const subject = subjectOf(peek.name, peek.labels, peekState?.runId, startBody?.runId);

    if (op === "process" && method === "GET") {
      await faultFor("runner", subject, null);
      const row = await requireSandbox(sandboxId);
      const p = processOf(row);
      return reply(res, 200, { process: { state: p.state, ...(p.pid !== null ? { pid: p.pid } : {}), ...(p.startedAt ? { startedAt: p.startedAt } : {}) } });
    }
    if (method !== "POST") throw new HttpError(404, "not_found", `no route for ${method} runner/${op}`);

    if (op === "start" && startBody) {
      const conflict = await faultFor("runner_start", subject, "bind_conflict");
      if (conflict) throw refusal(model.bindConflict(RUNNER_INGRESS_PORT));
      return reply(res, 200, await runnerTransition(sandboxId, (state, proc, now) =>
        model.start(state, proc, startBody, { pid: fakePid(), startedAt: now }, now, RUNNER_INGRESS_PORT),
      ));
    }
    if (op === "session-open") {
      await faultFor("session_open", subject, null);
      // The runner's own preconditions come first: a fault only hits a session it would open.
      const dry = model.sessionOpen(peekState, processOf(peek), new Date().toISOString());
      if (dry.refused) throw refusal(dry);
      if (!dry.writeProviderState) return reply(res, 200, { state: dry.state });
      if (await firstFault("session_open", subject, "never_connect")) return holdUntilCallerLeaves(req, res, peek.name);
      const reject = await firstFault("session_open", subject, "reject");
      if (reject && reject.fault.kind === "reject") {
        const failure = reject.fault.providerFailure;
        await runnerTransition(sandboxId, (state, proc, now) => {
          const t = model.sessionOpen(state, proc, now);
          if (t.refused || !state) return t;
          return { refused: false, state: model.sessionRejected(state, failure, now) };
        });
        throw new HttpError(422, "session_open_rejected", failure.message, { definite: true, providerFailure: failure });
      }
      return reply(res, 200, await runnerTransition(sandboxId, (state, proc, now) => model.sessionOpen(state, proc, now)));
    }
    await faultFor("runner", subject, null);
    switch (op) {
      case "reattach":
        return reply(res, 200, await runnerTransition(sandboxId, (s, p, now) => model.reattach(s, p, now)));
      case "turn":
        if (!turnBody) throw new HttpError(400, "bad_request", "seq is required");
        return reply(res, 200, await runnerTransition(sandboxId, (s, p, now) => model.turn(s, p, turnBody.seq, now)));
      case "suspend":
        return reply(res, 200, await runnerTransition(sandboxId, (s, p, now) => model.suspend(s, p, now)));
      case "stop":
        return reply(res, 200, await runnerStop(sandboxId));
      default:
        throw new HttpError(404, "not_found", `no runner operation ${op}`);
    }
  }

  /** Takes one use of the first applicable rule of `kind` (latency already applied). */
  async function firstFault(point: FaultPoint, subject: FaultSubject, kind: FaultKind): Promise<FaultRule | null> {
    for (const rule of applicableRules(await store.faults(), point, subject, kind)) {
      if (await store.consumeFault(rule.id)) return rule;
    }
    return null;
  }

  /** never_connect: no answer at all; the runner stays `connecting` until the caller gives up. */
  function holdUntilCallerLeaves(req: http.IncomingMessage, res: http.ServerResponse, name: string): Promise<void> {
    log(`emulator: session-open on ${name} held (never_connect fault)`);
    return new Promise<void>((resolve) => {
      const done = () => {
        closing.signal.removeEventListener("abort", onClose);
        resolve();
      };
      const onClose = () => {
        res.destroy();
        done();
      };
      res.on("close", done);
      closing.signal.addEventListener("abort", onClose, { once: true });
      req.resume();
    });
  }

  async function runnerTransition(
    sandboxId: string,
    fn: (state: RunnerState | null, proc: model.RunnerProcessRow, now: string) => model.Transition,
  ): Promise<{ state: RunnerState }> {
    return store.transaction(async (tx) => {
      const row = await requireSandbox(sandboxId, tx, true);
      requireStarted(row);
      const now = new Date();
      const t = fn(await readState(row.id, tx), processOf(row), now.toISOString());
      if (t.refused) throw refusal(t);
      if (t.moveAside) {
        // Bootstrap restart: keep the old runner root for inspection.
        const n = await store.nextBootstrapRestart(row.id, tx);
        await store.moveFile(row.id, RUNNER_STATE_PATH, bootstrapRestartPath(n), tx);
        await store.moveFile(row.id, PROVIDER_STATE_PATH, `${RUNNER_ROOT}/.bootstrap-restart-${n}/provider-state.json`, tx);
      }
      if (t.process) await store.setProcess(row.id, t.process, tx);
      if (t.writeProviderState) {
        await store.writeFile(row.id, PROVIDER_STATE_PATH, JSON.stringify({ sessionId: t.state.sessionId, provider: "emulated", openedAt: now.toISOString() }), now, tx);
      }
      await store.writeFile(row.id, RUNNER_STATE_PATH, JSON.stringify(t.state, null, 2), now, tx);
      return { state: t.state };
    });
  }

  async function runnerStop(sandboxId: string): Promise<{ state: RunnerState | null }> {
    return store.transaction(async (tx) => {
      const row = await requireSandbox(sandboxId, tx, true);
      const now = new Date();
      const t = model.stop(await readState(row.id, tx), processOf(row), now.toISOString());
      await store.setProcess(row.id, t.process, tx);
      if (t.state) await store.writeFile(row.id, RUNNER_STATE_PATH, JSON.stringify(t.state, null, 2), now, tx);
      return { state: t.state };
    });
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
          runnerProcess: processOf(r),
          bootstrapRestarts: r.bootstrap_restarts,
        })),
      });
    }
    if (what === "sandboxes" && id === undefined && method === "POST") return reply(res, 200, await plant(await readJson(req, PlantSchema)));
    if (what === "sandboxes" && id && parts[2] === "files" && method === "GET") {
      const row = await requireSandbox(id);
      return reply(res, 200, { files: await store.listFiles(row.id) });
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
      await store.reset();
      return reply(res, 200, { ok: true });
    }
    if (what === "config" && method === "GET") return reply(res, 200, config);
    if (what === "config" && method === "POST") {
      const next = await readJson(req, ConfigSchema);
      if (next.duplicateNames) config.duplicateNames = next.duplicateNames;
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
        },
        tx,
      );
      for (const [path, text] of Object.entries(body.files ?? {})) await store.writeFile(id, resolvePath(path), text, createdAt, tx);
      if (body.runnerState) await store.writeFile(id, RUNNER_STATE_PATH, JSON.stringify(body.runnerState, null, 2), createdAt, tx);
      const rp = body.runnerProcess ?? (body.runnerState?.process ? { state: "running" as const, ...body.runnerState.process } : null);
      if (rp) await store.setProcess(id, { state: rp.state, pid: rp.pid ?? null, startedAt: rp.startedAt ?? null }, tx);
      return (await store.byId(id, tx)) ?? inserted;
    });
    return toApi(row);
  }

  function toApi(row: SandboxRow) {
    const at = (d: Date) => d.toISOString();
    return {
      id: row.id,
      organizationId: ORGANIZATION_ID,
      name: row.name,
      snapshot: "runwarden-emulator",
      user: "sandbox",
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
      autoStopInterval: 0,
      autoArchiveInterval: 0,
      autoDeleteInterval: -1,
      createdAt: at(row.created_at),
      updatedAt: at(row.updated_at),
      lastActivityAt: at(row.updated_at),
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

  let closed: Promise<void> | null = null;
  return {
    url: baseUrl,
    port,
    toolboxUrl: `${baseUrl}/toolbox`,
    store,
    config,
    close() {
      closed ??= (async () => {
        closing.abort();
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

function requireStarted(row: SandboxRow) {
  if (row.destroyed_at) throw new HttpError(404, "sandbox_not_found", `Sandbox ${row.id} is destroyed`);
  if (row.state !== "started") throw new HttpError(409, "sandbox_not_started", `Sandbox ${row.id} is ${row.state}`);
}

function refusal(r: model.RunnerRefusal): HttpError {
  return new HttpError(r.status, r.code, r.message);
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
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY) throw new HttpError(413, "payload_too_large", "request body over 1 MiB");
    chunks.push(chunk as Buffer);
  }
  const text = Buffer.concat(chunks).toString("utf8").trim();
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

/** Relative paths are relative to the sandbox user's home, as in Daytona. */
function resolvePath(path: string): string {
  const abs = path.startsWith("/") ? path : `${HOME}/${path}`;
  const out: string[] = [];
  for (const part of abs.split("/")) {
    if (!part || part === ".") continue;
    if (part === "..") out.pop();
    else out.push(part);
  }
  return `/${out.join("/")}`;
}

function fakePid(): number {
  return 1000 + crypto.randomInt(60_000);
}
