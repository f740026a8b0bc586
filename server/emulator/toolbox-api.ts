import fs from "node:fs";
import type http from "node:http";
import path from "node:path";
import { z } from "zod";
import { RUNNER_STATE_PATH } from "../providers/runner";
import type { EmulatorContext } from "./context";
import { subjectOf } from "./faults";
import { HttpError, readBody, readJson, reply } from "./http";
import { ensureSandboxDirs, execute, resolveInSandbox, SANDBOX_MARKER, startSquatter, type SandboxHost } from "./sandbox-host";
import type { SandboxRow } from "./store";

/**
 * The toolbox API per sandbox (docs/daytona.md "The toolbox"), `/toolbox/{id}/…`: real commands in the sandbox's
 * directory on this host. Faults are real here: they change what runs, not the answer.
 */

const TOOLBOX_VERSION = "0.190.0-runwarden-emulator";

const executeSchema = z.object({
  command: z.string().min(1),
  cwd: z.string().optional(),
  envs: z.record(z.string(), z.string()).optional(),
  timeout: z.number().int().min(0).optional(),
});

export async function toolboxApi(ctx: EmulatorContext, sandboxId: string, route: string, method: string, url: URL, req: http.IncomingMessage, res: http.ServerResponse) {
  const { store, inFlight } = ctx;
  // The toolbox proxy resolves a sandbox by id only (docs/daytona.md "The toolbox"), never by name.
  const row = await store.byId(sandboxId);
  const now = Date.now();
  if (!row || row.visible_at.getTime() > now) throw new HttpError(404, "not_found", `sandbox container ${sandboxId} not found`);
  if (row.destroyed_at || row.state === "destroying") throw goneAnswer(ctx, row, now);
  const host = ctx.hostOf(row);
  if (row.state !== "started") throw new HttpError(400, "bad_request", `Sandbox ${row.id} is ${row.state}. Is the Sandbox started?`);
  ensureSandboxDirs(host);
  // A toolbox call is activity, and one in progress keeps the sandbox up (Daytona's proxy
  // updates the last activity when it starts and every 50 s while it lasts) — unless it carries
  // `X-Daytona-Skip-Last-Activity-Update: true`, exactly that value: then neither
  // (daytonaio/daytona@v0.190.0 apps/proxy/pkg/proxy/get_sandbox_target.go, `GetProxyTarget`
  // and `updateLastActivity`; the header's name in apps/proxy/pkg/proxy/proxy.go).
  if (req.headers["x-daytona-skip-last-activity-update"] === "true") return toolboxRoute(ctx, row, host, route, method, url, req, res);
  await store.touch(row.id, new Date());
  inFlight.set(row.id, (inFlight.get(row.id) ?? 0) + 1);
  try {
    return await toolboxRoute(ctx, row, host, route, method, url, req, res);
  } finally {
    const n = (inFlight.get(row.id) ?? 1) - 1;
    if (n > 0) inFlight.set(row.id, n);
    else inFlight.delete(row.id);
    await store.touch(row.id, new Date()).catch(() => {});
  }
}

/**
 * A deleted sandbox, as Daytona's toolbox proxy answers for it (config `toolboxGone`): 404
 * while the proxy's caches still know it, then 401 or 400 — never a 404 again.
 */
function goneAnswer(ctx: EmulatorContext, row: SandboxRow, now: number): HttpError {
  // The delete's moment: its last activity (a transition's end moves updated_at, not this).
  const goneFor = now - (row.last_activity_at ?? row.updated_at).getTime();
  const { afterMs, status } = ctx.config.toolboxGone;
  if (goneFor < afterMs) return new HttpError(404, "not_found", `sandbox container ${row.id} not found`);
  return status === 401
    ? new HttpError(401, "unauthorized", "Bearer token is invalid")
    : new HttpError(400, "bad_request", `failed to get runner info: sandbox ${row.id} not found`);
}

async function toolboxRoute(ctx: EmulatorContext, row: SandboxRow, host: SandboxHost, route: string, method: string, url: URL, req: http.IncomingMessage, res: http.ServerResponse) {
  if (method === "GET" && route === "version") return reply(res, 200, { version: TOOLBOX_VERSION });
  if (method === "GET" && route === "user-home-dir") {
    await ctx.faultFor("files", subjectOf(row.name, row.labels, runIdOnDisk(host)), null);
    return reply(res, 200, { dir: host.home });
  }
  if (method === "GET" && route === "files/download") {
    await ctx.faultFor("files", subjectOf(row.name, row.labels, runIdOnDisk(host)), null);
    return download(host, url.searchParams.get("path"), res);
  }
  if (method === "POST" && route === "files/bulk-upload") return reply(res, 200, await bulkUpload(host, req));
  if (method === "POST" && route === "files/bulk-download") {
    await ctx.faultFor("files", subjectOf(row.name, row.labels, runIdOnDisk(host)), null);
    return bulkDownload(host, req, res);
  }
  if (method === "POST" && route === "process/execute") return processExecute(ctx, row, host, await readJson(req, executeSchema), res);
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
const bulkDownloadSchema = z.object({ paths: z.array(z.string()).min(1) });
const BULK_BOUNDARY = "DAYTONA-FILE-BOUNDARY";

/**
 * `POST /files/bulk-download` (Daytona's daemon, apps/daemon/pkg/toolbox/fs/download_files.go
 * at v0.190.0; what the TypeScript SDK's `fs.downloadFile` calls): `{paths: [...]}` in, a
 * multipart answer out — a `file` part per file read, an `error` part (JSON) per file that
 * could not be, each named by its path. Content types are all application/octet-stream here
 * (Daytona guesses them from the extension).
 */
async function bulkDownload(host: SandboxHost, req: http.IncomingMessage, res: http.ServerResponse) {
  const raw = await readBody(req);
  let parsed: z.infer<typeof bulkDownloadSchema> | null = null;
  try {
    const ok = bulkDownloadSchema.safeParse(JSON.parse(raw.toString("utf8")));
    if (ok.success) parsed = ok.data;
  } catch {
    // falls through to the daemon's 400
  }
  if (!parsed) return reply(res, 400, { error: 'request body must be {"paths": [ ... ]} and non-empty' });
  const chunks: Buffer[] = [];
  const part = (headers: Record<string, string>, body: Buffer) => {
    chunks.push(Buffer.from(`--${BULK_BOUNDARY}\r\n${Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join("")}\r\n`), body, Buffer.from("\r\n"));
  };
  for (const p of parsed.paths) {
    const disposition = (name: string) => `form-data; name="${name}"; filename="${latin1(p)}"; filename*=utf-8''${rfc5987(p)}`;
    const failure = (statusCode: number, code: string, message: string) =>
      part(
        { "Content-Disposition": disposition("error"), "Content-Type": "application/json; charset=utf-8" },
        Buffer.from(JSON.stringify({ statusCode, message, code, timestamp: new Date().toISOString(), path: p, method: "POST" })),
      );
    const file = p === "" ? null : resolveInSandbox(host, p);
    if (p === "") {
      failure(400, "INVALID_FILE_PATH", "invalid file path: path is empty");
      continue;
    }
    let content: Buffer;
    try {
      // Outside this sandbox's directory is another file system: there is no such file.
      if (!file) throw Object.assign(new Error("outside"), { code: "ENOENT" });
      content = fs.readFileSync(file);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ENOENT" || code === "ENOTDIR") failure(404, "FILE_NOT_FOUND", `file not found: ${p}`);
      else if (code === "EACCES") failure(403, "FILE_ACCESS_DENIED", `permission denied: ${p}`);
      else failure(500, "FILE_READ_FAILED", `failed to open file: ${(err as Error).message}`);
      continue;
    }
    part({ "Content-Disposition": disposition("file"), "Content-Length": String(content.length), "Content-Type": "application/octet-stream" }, content);
  }
  chunks.push(Buffer.from(`--${BULK_BOUNDARY}--\r\n`));
  const body = Buffer.concat(chunks);
  res.writeHead(200, { "content-type": `multipart/form-data; boundary=${BULK_BOUNDARY}`, "content-length": body.length });
  res.end(body);
}

/** A path as the daemon puts it in a `filename` parameter: quotes escaped, controls and non-Latin-1 as `_`. */
function latin1(s: string): string {
  return [...s.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/[\r\n\0]/g, "")].map((ch) => {
    const c = ch.codePointAt(0) ?? 0;
    return c > 0xff || c < 0x20 || c === 0x7f ? "_" : ch;
  }).join("");
}

/** RFC 5987 encoding, as the daemon's `filename*`. */
function rfc5987(s: string): string {
  return [...Buffer.from(s, "utf8")].map((b) => (/[A-Za-z0-9!#$&+\-.^_`|~]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, "0")}`)).join("");
}

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

/** A directory whose `node` answers as a shell that has none does (exit 127). */
function missingNodeDir(ctx: EmulatorContext): string {
  const dir = path.join(ctx.dataDir, "no-node-bin");
  const node = path.join(dir, "node");
  if (!fs.existsSync(node)) {
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(node, "#!/bin/sh\necho 'sh: 1: node: not found' >&2\nexit 127\n", { mode: 0o755 });
  }
  return dir;
}

/** What a process in this sandbox sees: its HOME, the sandbox env, its ingress port. */
function sandboxEnv(ctx: EmulatorContext, row: SandboxRow, host: SandboxHost): Record<string, string> {
  // A snapshot without node: this host's node is shadowed by one the shell reports missing.
  const noNode = row.snapshot !== null && ctx.config.snapshotsWithoutNode.includes(row.snapshot);
  return {
    PATH: `${noNode ? `${missingNodeDir(ctx)}:` : `${path.dirname(process.execPath)}:`}/usr/local/bin:/usr/bin:/bin`,
    HOME: host.home,
    USER: "daytona",
    LANG: "C.UTF-8",
    ...row.env,
    RUNWARDEN_INGRESS_PORT: String(row.ingress_port ?? 43127),
    [SANDBOX_MARKER]: host.root,
  };
}

async function processExecute(ctx: EmulatorContext, row: SandboxRow, host: SandboxHost, body: z.infer<typeof executeSchema>, res: http.ServerResponse) {
  const { log } = ctx;
  const env = sandboxEnv(ctx, row, host);
  const envs: Record<string, string> = { ...(body.envs ?? {}) };
  // Faults are real here: they change what runs in the sandbox, not the answer.
  const plain = body.command.replace(/'/g, "");
  const isStart = /runnerd\S*\s+start\b/.test(plain);
  const isSessionOpen = /\bctl\s+session-open\b/.test(plain);
  const startRun = /--run\s+(\S+)/.exec(plain)?.[1];
  const subject = subjectOf(row.name, row.labels, runIdOnDisk(host), startRun);
  let squatter: { release(): void } | null = null;
  if (isStart) {
    await ctx.faultFor("runner_start", subject, null);
    if (await ctx.firstFault("runner_start", subject, "bind_conflict")) {
      log(`emulator: squatter on ${row.name}'s ingress port ${row.ingress_port} (bind_conflict fault)`);
      squatter = await startSquatter(host, env, row.ingress_port ?? 43127);
    }
  } else if (isSessionOpen) {
    await ctx.faultFor("session_open", subject, null);
    // Only a session the runner would open is hit (its own preconditions come first).
    if (lifecycleOnDisk(host) === "connecting") {
      if (await ctx.firstFault("session_open", subject, "never_connect")) {
        log(`emulator: session command on ${row.name} hangs (never_connect fault)`);
        envs.RUNWARDEN_SESSION_COMMAND = `exec ${JSON.stringify(process.execPath)} -e "setInterval(() => {}, 1e9)"`;
      } else {
        const reject = await ctx.firstFault("session_open", subject, "reject");
        if (reject?.fault.kind === "reject") {
          const line = JSON.stringify({ providerFailure: reject.fault.providerFailure });
          envs.RUNWARDEN_SESSION_COMMAND = `printf '%s\\n' ${shellQuote(line)}; exit 1`;
        }
      }
    }
  } else {
    await ctx.faultFor("runner", subject, null);
  }
  try {
    const result = await execute(host, env, { command: body.command, cwd: body.cwd, envs, timeout: body.timeout });
    if (result.timedOut) throw new HttpError(408, "request_timeout", `command timed out after ${body.timeout ?? 360} s`);
    return reply(res, 200, { exitCode: result.exitCode, result: result.result });
  } finally {
    squatter?.release();
  }
}

function shellQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}
