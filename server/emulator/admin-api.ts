import crypto from "node:crypto";
import fs from "node:fs";
import type http from "node:http";
import path from "node:path";
import { z } from "zod";
import { RUNNER_STATE_PATH, runnerStateSchema } from "../providers/runner";
import type { EmulatorContext } from "./context";
import { faultRuleInputSchema } from "./faults";
import { HttpError, readJson } from "./http";
import { createSchema, toApi } from "./sandbox-api";
import { ensureSandboxDirs, freePort, killSandboxProcesses, listFiles, resolveInSandbox, type SandboxHost } from "./sandbox-host";

/** The admin API (`/admin/…`): what tests and the console see and set beyond Daytona's API. */

const plantSchema = createSchema.extend({
  id: z.string().min(1).optional(),
  state: z.enum(["started", "stopped", "archived"]).optional(),
  createdAt: z.iso.datetime({ offset: true }).optional(),
  files: z.record(z.string(), z.string()).optional(),
  runnerState: runnerStateSchema.optional(),
});
/**
 * A state Daytona reaches on its own, set by hand: `archived` / `archiving` (a stopped sandbox
 * archived), `error` / `build_failed` (with the reason Daytona would show). Processes end.
 */
const forceStateSchema = z.object({
  state: z.enum(["archived", "archiving", "error", "build_failed"]),
  errorReason: z.string().min(1).optional(),
  /** Archive a started sandbox as auto-stop then auto-archive would (its processes end): chaos waves. */
  fromStarted: z.boolean().optional(),
});
const configSchema = z.object({
  duplicateNames: z.enum(["conflict", "allow"]).optional(),
  destroyedRetentionMs: z.number().int().min(0).optional(),
  transitionMs: z.object({ create: z.number().int().min(0), start: z.number().int().min(0), stop: z.number().int().min(0), destroy: z.number().int().min(0) }).partial().optional(),
  autoStopMinuteMs: z.number().int().min(1).optional(),
  toolboxGone: z.object({ afterMs: z.number().int().min(0), status: z.union([z.literal(401), z.literal(400)]) }).partial().optional(),
  serverWaitMs: z.number().int().min(0).max(600_000).optional(),
  snapshotsWithoutNode: z.array(z.string().min(1)).optional(),
  lookupCacheMs: z.number().int().min(0).max(600_000).optional(),
  listLagMs: z.number().int().min(0).max(600_000).optional(),
});

/** The answer (always 200) to an `/admin/…` request (`parts` after `admin`). */
export async function adminApi(ctx: EmulatorContext, parts: string[], method: string, url: URL, req: http.IncomingMessage): Promise<object> {
  const { store, config, log } = ctx;
  const [what, id] = parts;
  if (what === "sandboxes" && !id && method === "GET") {
    const rows = await store.all(url.searchParams.get("includeDestroyed") === "true");
    const now = Date.now();
    return {
      items: rows.map((r) => ({
        ...toApi(ctx, r),
        visibleAt: r.visible_at.toISOString(),
        materialised: r.visible_at.getTime() <= now,
        destroyedAt: r.destroyed_at?.toISOString() ?? null,
        runnerProcess: runnerProcessOf(resolveInSandbox(ctx.hostOf(r), RUNNER_STATE_PATH)),
        ingressPort: r.ingress_port,
      })),
    };
  }
  if (what === "sandboxes" && id === undefined && method === "POST") return plant(ctx, await readJson(req, plantSchema));
  if (what === "sandboxes" && id && parts[2] === "files" && method === "GET") {
    const row = await ctx.requireSandbox(id);
    return { home: ctx.hostOf(row).home, files: listFiles(ctx.hostOf(row).root) };
  }
  if (what === "sandboxes" && id && parts[2] === "state" && method === "POST") {
    const body = await readJson(req, forceStateSchema);
    const row = await ctx.requireSandbox(id);
    if ((body.state === "archived" || body.state === "archiving") && row.state !== "stopped" && !(body.fromStarted && row.state === "started")) {
      // Daytona archives only a stopped sandbox (sandbox.service.ts archive()).
      throw new HttpError(400, "bad_request", `Sandbox ${row.id} is ${row.state}: only a stopped sandbox can be archived`);
    }
    await killSandboxProcesses(ctx.hostOf(row));
    const now = new Date();
    const archiving = body.state === "archiving";
    const desired = body.state === "archived" || archiving ? "archived" : row.desired_state;
    const out = await store.forceState(row.id, body.state, desired, body.errorReason ?? null, now, archiving ? new Date(now.getTime() + Math.max(config.transitionMs.stop, 1)) : null);
    log(`emulator: ${row.name} set to ${body.state}${body.errorReason ? ` (${body.errorReason})` : ""}`);
    return toApi(ctx, out);
  }
  if (what === "faults" && !id && method === "GET") return { faults: await store.faults() };
  if (what === "faults" && !id && method === "POST") {
    const input = await readJson(req, faultRuleInputSchema);
    const rule = await store.addFault(input);
    log(`emulator: fault ${rule.fault.kind} set for ${JSON.stringify(rule.match)}${rule.times ? ` (${rule.times}x)` : ""}`);
    return rule;
  }
  if (what === "faults" && method === "DELETE") return { deleted: await store.deleteFaults(id) };
  if (what === "reset" && method === "POST") {
    for (const r of await store.all(true)) await killSandboxProcesses(ctx.hostOf(r));
    await store.reset();
    return { ok: true };
  }
  if (what === "config" && method === "GET") return config;
  if (what === "config" && method === "POST") {
    const next = await readJson(req, configSchema);
    if (next.duplicateNames) config.duplicateNames = next.duplicateNames;
    if (next.transitionMs) config.transitionMs = { ...config.transitionMs, ...next.transitionMs };
    if (next.autoStopMinuteMs !== undefined) config.autoStopMinuteMs = next.autoStopMinuteMs;
    if (next.toolboxGone) config.toolboxGone = { ...config.toolboxGone, ...next.toolboxGone };
    if (next.serverWaitMs !== undefined) config.serverWaitMs = next.serverWaitMs;
    if (next.snapshotsWithoutNode) config.snapshotsWithoutNode = next.snapshotsWithoutNode;
    if (next.lookupCacheMs !== undefined) config.lookupCacheMs = next.lookupCacheMs;
    if (next.listLagMs !== undefined) config.listLagMs = next.listLagMs;
    if (next.destroyedRetentionMs !== undefined) {
      config.destroyedRetentionMs = next.destroyedRetentionMs;
      store.destroyedRetentionMs = next.destroyedRetentionMs;
    }
    return config;
  }
  throw new HttpError(404, "not_found", `no admin route for ${method} ${url.pathname}`);
}

/** Plants a sandbox directly (decoys, prepared runner states): no faults, same name rule. */
async function plant(ctx: EmulatorContext, body: z.infer<typeof plantSchema>) {
  const { store, config } = ctx;
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
  const host: SandboxHost = ctx.hostOf(row);
  ensureSandboxDirs(host);
  const files: Record<string, string> = { ...(body.files ?? {}) };
  if (body.runnerState) files[RUNNER_STATE_PATH] = JSON.stringify(body.runnerState, null, 2);
  for (const [p, text] of Object.entries(files)) {
    const target = resolveInSandbox(host, p);
    if (!target) throw new HttpError(400, "bad_request", `${p} is outside the sandbox`);
    fs.mkdirSync(path.dirname(target), { recursive: true });
    fs.writeFileSync(target, text);
  }
  return toApi(ctx, row);
}

/** The runner process on a sandbox as the admin view shows it (from its state file's identity). */
function runnerProcessOf(stateFile: string | null): { state: "running" | "stopped" | "absent"; pid: number | null } {
  let pid: number | null = null;
  try {
    const v = JSON.parse(fs.readFileSync(stateFile ?? "", "utf8")) as { process?: { pid?: unknown } };
    pid = typeof v.process?.pid === "number" ? v.process.pid : null;
  } catch {
    return { state: "absent", pid: null };
  }
  const running = pid !== null && fs.existsSync(`/proc/${pid}`) && !/\) [ZX] /.test(safeRead(`/proc/${pid}/stat`));
  return { state: running ? "running" : "stopped", pid };
}

function safeRead(file: string): string {
  try {
    return fs.readFileSync(file, "utf8");
  } catch {
    return "";
  }
}
