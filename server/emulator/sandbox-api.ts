import crypto from "node:crypto";
import fs from "node:fs";
import type http from "node:http";
import { z } from "zod";
import type { EmulatorContext } from "./context";
import { subjectOf } from "./faults";
import { HttpError, intParam, readJson } from "./http";
import { ensureSandboxDirs, freePort, killSandboxProcesses } from "./sandbox-host";
import { TRANSITIONS, type Queryable, type SandboxRow, type SortKey } from "./store";

/** The subset of Daytona's REST API that server/providers/daytona.ts uses (DAYTONA.md): `/sandbox/…`. */

const ORGANIZATION_ID = "emulator-org";
/** The image a sandbox is made from when the create names none: it has node, as Daytona's default snapshot does. */
export const EMULATOR_SNAPSHOT = "runwarden-emulator";
const CHANGING = new Set(Object.keys(TRANSITIONS));
const SORT_KEYS: readonly SortKey[] = ["createdAt", "updatedAt", "lastActivityAt", "name"];

export const labelsSchema = z.record(z.string(), z.string());
export const createSchema = z.object({
  name: z.string().min(1).max(255).optional(),
  labels: labelsSchema.optional(),
  env: z.record(z.string(), z.string()).optional(),
  cpu: z.number().positive().optional(),
  memory: z.number().positive().optional(),
  disk: z.number().positive().optional(),
  autoStopInterval: z.number().int().min(0).optional(),
  /** The image to make it from (Daytona's `snapshot`); config `snapshotsWithoutNode` lists those without node. */
  snapshot: z.string().min(1).max(255).optional(),
  /** Minutes stopped before it is archived (Daytona: default 7 days, 0 = the maximum). */
  autoArchiveInterval: z.number().int().min(0).optional(),
  /** Minutes stopped before it is deleted (Daytona: default -1 = never, 0 = at stop; sandbox.entity.ts). */
  autoDeleteInterval: z.number().int().optional(),
});

/** The answer (always 200) to a `/sandbox/…` request; null when no route matches. */
export async function sandboxApi(ctx: EmulatorContext, parts: string[], method: string, url: URL, req: http.IncomingMessage): Promise<object | null> {
  const [, a, b] = parts;
  if (parts.length === 1 && method === "POST") return createSandbox(ctx, await readJson(req, createSchema));
  if (parts.length === 1 && method === "GET") return listSandboxes(ctx, url);
  if (a && parts.length === 2 && method === "GET") return sandboxOp(ctx, a, "get");
  if (a && parts.length === 2 && method === "DELETE") return sandboxOp(ctx, a, "delete");
  if (a && parts.length === 3 && b === "start" && method === "POST") return sandboxOp(ctx, a, "start");
  if (a && parts.length === 3 && b === "stop" && method === "POST") return sandboxOp(ctx, a, "stop");
  if (a && parts.length === 3 && b === "toolbox-proxy-url" && method === "GET") {
    await ctx.requireSandbox(a);
    return { url: `${ctx.baseUrl()}/toolbox` };
  }
  return null;
}

async function createSandbox(ctx: EmulatorContext, body: z.infer<typeof createSchema>) {
  const { store, config } = ctx;
  const arrived = Date.now();
  const id = crypto.randomUUID();
  const name = body.name ?? id;
  const labels = body.labels ?? {};
  const late = await ctx.faultFor("create", subjectOf(name, labels), "late");
  const delayMs = late?.fault.kind === "late" ? late.fault.delayMs : 0;
  const slow = await ctx.firstFault("create", subjectOf(name, labels), "slow_start");
  const slowStart = slow?.fault.kind === "slow_start" ? slow.fault : null;
  // Stored now, visible from arrival + delay: the caller may abort, the sandbox still appears.
  const visibleAt = new Date(arrived + delayMs);
  // Daytona answers `creating`; toolbox calls work once it is `started`.
  const createMs = slowStart ? Math.max(slowStart.ms, 1) : config.transitionMs.create;
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
        autoArchiveInterval: body.autoArchiveInterval || 7 * 24 * 60,
        // Any negative value is "never", as Daytona's `autoDeleteInterval >= 0` check reads it.
        autoDeleteInterval: body.autoDeleteInterval === undefined || body.autoDeleteInterval < 0 ? -1 : body.autoDeleteInterval,
        transitionError: slowStart?.outcome === "error" ? slowStart.errorReason : null,
        snapshot: body.snapshot ?? null,
        createdAt: visibleAt,
        visibleAt,
        ingressPort: await freePort(),
      },
      tx,
    );
  });
  ensureSandboxDirs(ctx.hostOf(row));
  if (delayMs > 0) {
    ctx.log(`emulator: create ${name} held ${delayMs} ms (late fault)`);
    await ctx.sleep(visibleAt.getTime() - Date.now());
  }
  if (slowStart) ctx.log(`emulator: create ${name} takes ${slowStart.ms} ms to ${slowStart.outcome === "error" ? "fail" : "start"} (slow_start fault)`);
  // Daytona answers the DTO it created (`creating`) — but only once the sandbox started, failed
  // (400, the sandbox kept) or its 30 s wait passed (sandbox.controller.ts createSandbox).
  await waitForStarted(ctx, row.id);
  return toApi(ctx, row);
}

/**
 * Daytona's `waitForSandboxStarted(sandbox, 30)`: until the sandbox is `started` or the wait
 * is over; `error` / `build_failed` meanwhile is a 400 "Sandbox failed to start: <reason>".
 * The latest row, for start's answer.
 */
async function waitForStarted(ctx: EmulatorContext, id: string): Promise<SandboxRow | null> {
  const deadline = Date.now() + ctx.config.serverWaitMs;
  for (;;) {
    const row = await ctx.store.settledById(id, new Date());
    if (!row || row.destroyed_at) return row;
    if (row.state === "error" || row.state === "build_failed") throw new HttpError(400, "bad_request", `Sandbox failed to start: ${row.error_reason ?? "unknown error"}`);
    if (!CHANGING.has(row.state) || row.state === "destroying" || row.state === "stopping") return row;
    const wait = Math.min(25, deadline - Date.now(), Math.max(0, (row.transition_until?.getTime() ?? 0) - Date.now()) + 1);
    if (wait <= 0) return row;
    await ctx.sleep(wait);
  }
}

async function listSandboxes(ctx: EmulatorContext, url: URL) {
  let labels: Record<string, string> = {};
  const raw = url.searchParams.get("labels");
  if (raw !== null) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch {
      throw new HttpError(400, "bad_request", "labels must be a JSON object of string values");
    }
    const ok = labelsSchema.safeParse(parsed);
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
  await ctx.faultFor("list", subjectOf(null, labels), null);
  const rows = await ctx.store.list(
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
  // Daytona's list is eventually consistent (its search index lags the database): the newest are not in it yet.
  const lag = ctx.config.listLagMs;
  const page = rows.slice(0, limit).filter((r) => lag <= 0 || Date.now() - r.created_at.getTime() >= lag);
  const last = rows.slice(0, limit).at(-1);
  return { items: page.map((r) => toApi(ctx, r)), nextCursor: rows.length > limit && last ? encodeCursor(sortValue(last, sort), last.id) : null };
}

async function sandboxOp(ctx: EmulatorContext, idOrName: string, op: "get" | "delete" | "start" | "stop") {
  const { store, config } = ctx;
  // A DELETE of a sandbox at rest while no fault rule is set (every teardown of a reclaim
  // sweep) is one statement, with no lookup before it (docs/decisions/0003-cost-at-scale.md); anything else, the paths below.
  const direct = op === "delete" ? await deleteNow(ctx, idOrName) : null;
  if (direct) return afterChange(ctx, "delete", direct);
  const { row: found, rules } = await store.findWithFaults(idOrName, new Date());
  // No rule set (the usual case): nothing can delay or fail this call, so the row just read is
  // the answer to a GET. With rules, the full path below; a DELETE that was not done above takes
  // the locked path (its error, or a transition that was due and is settled now).
  const quiet = rules.length === 0;
  if (!quiet) await ctx.faultFor("sandbox", found ? subjectOf(found.name, found.labels) : subjectOf(idOrName, {}), null, rules);
  if (op === "get") {
    // Daytona caches a lookup by name for 10 s, a "not found" too (sandbox-lookup-cache.util.ts).
    if (ctx.lookupCache.stale(idOrName, found)) throw new HttpError(404, "not_found", `Sandbox with ID or name ${idOrName} not found`);
    if (quiet && found) return toApi(ctx, found);
    try {
      return toApi(ctx, await ctx.requireSandbox(idOrName));
    } catch (err) {
      if (err instanceof HttpError && err.status === 404) ctx.lookupCache.missed(idOrName);
      throw err;
    }
  }
  const slow = op === "start" && found ? await ctx.firstFault("start", subjectOf(found.name, found.labels), "slow_start") : null;
  const slowStart = slow?.fault.kind === "slow_start" ? slow.fault : null;
  const startMs = slowStart ? Math.max(slowStart.ms, 1) : config.transitionMs.start;
  const out = await store.transaction(async (tx) => {
    const row = await ctx.requireSandbox(idOrName, tx, true);
    const now = new Date();
    const ms = config.transitionMs;
    const until = (d: number) => (d > 0 ? new Date(now.getTime() + d) : null);
    if (row.destroyed_at) {
      if (op === "delete") throw new HttpError(404, "not_found", `Sandbox ${row.id} is already destroyed`);
      throw new HttpError(400, "bad_request", `Sandbox ${row.id} is destroyed`);
    }
    // Daytona refuses a lifecycle change while one is under way, but starts an archiving
    // sandbox (sandbox.service.ts start(): "Allow start of stopped | archived and archiving | archived").
    if (CHANGING.has(row.state) && !(op === "start" && row.state === "archiving")) throw new HttpError(409, "conflict", "Sandbox state change in progress");
    switch (op) {
      case "delete":
        return toApi(ctx, await softDelete(ctx, row, now, tx));
      case "start":
        if (row.state === "started") return toApi(ctx, row);
        // Only these start (sandbox.service.ts start(): "Sandbox is not in valid state", a 400).
        if (!["stopped", "archived", "archiving"].includes(row.state)) throw new HttpError(400, "bad_request", "Sandbox is not in valid state");
        if (row.state !== "stopped") {
          // Restored from the archive first: slower than a start, and its DTO still says `archived` meanwhile.
          return toApi(ctx, await store.setState(row.id, "restoring", "started", now, tx, { transitionUntil: until(Math.max(ms.start, 1) * 3) }));
        }
        return toApi(ctx, await store.setState(row.id, startMs > 0 ? "starting" : "started", "started", now, tx, { transitionUntil: until(startMs), transitionError: slowStart?.outcome === "error" ? slowStart.errorReason : null }));
      case "stop":
        if (row.state !== "started") throw new HttpError(400, "bad_request", `Sandbox ${row.id} is ${row.state}, not started`);
        // An ephemeral sandbox (autoDeleteInterval 0) is deleted by its stop (sandbox.service.ts stop(), isEphemeral).
        if (row.auto_delete_interval === 0) return toApi(ctx, await softDelete(ctx, row, now, tx));
        return toApi(ctx, await store.setState(row.id, ms.stop > 0 ? "stopping" : "stopped", "stopped", now, tx, { transitionUntil: until(ms.stop) }));
      default: {
        const never: never = op;
        return never;
      }
    }
  });
  return afterChange(ctx, op, out);
}

/**
 * Daytona's soft delete (`Sandbox.getSoftDeleteUpdate`): `destroying`, then `destroyed`. Renamed
 * at once: GET by name is a 404, the name is free; GET by id shows `destroying`.
 */
export async function softDelete(ctx: EmulatorContext, row: SandboxRow, now: Date, tx: Queryable): Promise<SandboxRow> {
  const ms = ctx.config.transitionMs.destroy;
  return ctx.store.setState(row.id, ms > 0 ? "destroying" : "destroyed", "destroyed", now, tx, {
    destroyed: ms <= 0,
    transitionUntil: ms > 0 ? new Date(now.getTime() + ms) : null,
    name: `DESTROYED_${row.name}_${now.getTime()}`,
  });
}

async function afterChange(ctx: EmulatorContext, op: "delete" | "start" | "stop", out: ReturnType<typeof toApi>) {
  // A stopped or deleted sandbox keeps no process running, detached ones included.
  if (op === "stop" || op === "delete") await killSandboxProcesses(ctx.hostOf(out));
  // Daytona's start waits for `started` (up to 30 s), unless it restores from the archive (sandbox.controller.ts startSandbox).
  if (op === "start" && out.state !== "archived") {
    const latest = await waitForStarted(ctx, out.id);
    if (latest) return toApi(ctx, latest);
  }
  // Off the event loop: a synchronous rm held every other request up (a reclaim sweep's
  // profile spent 5 % of its CPU here). Daytona's delete does not wait for the disk either.
  if (op === "delete" || out.desiredState === "destroyed") await fs.promises.rm(ctx.hostOf(out).root, { recursive: true, force: true });
  return out;
}

/** A DELETE in one statement; null when the locked path must decide (gone, destroyed, changing state). */
async function deleteNow(ctx: EmulatorContext, idOrName: string) {
  const now = new Date();
  const ms = ctx.config.transitionMs.destroy;
  const row = await ctx.store.deleteNow(idOrName, now, ms > 0 ? new Date(now.getTime() + ms) : null);
  return row ? toApi(ctx, row) : null;
}

/** A sandbox as Daytona's REST API answers it. */
export function toApi(ctx: EmulatorContext, row: SandboxRow) {
  const at = (d: Date) => d.toISOString();
  return {
    id: row.id,
    organizationId: ORGANIZATION_ID,
    name: row.name,
    snapshot: row.snapshot ?? EMULATOR_SNAPSHOT,
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
    // A restore shows `archived` (desired `started`) until its sandbox is up (docs/daytona.md, "Start, stop, delete").
    state: row.state === "restoring" ? "archived" : row.state,
    desiredState: row.desired_state,
    errorReason: row.error_reason ?? undefined,
    autoStopInterval: row.auto_stop_interval,
    autoArchiveInterval: row.auto_archive_interval,
    autoDeleteInterval: row.auto_delete_interval,
    createdAt: at(row.created_at),
    updatedAt: at(row.updated_at),
    lastActivityAt: at(row.last_activity_at ?? row.updated_at),
    toolboxProxyUrl: `${ctx.baseUrl()}/toolbox`,
  };
}

/** Daytona's list cursor: base64 of `{sortValue, id}` (the last row of the page). */
function encodeCursor(sortValue: string, id: string): string {
  return Buffer.from(JSON.stringify({ sortValue, id })).toString("base64");
}

const cursorSchema = z.object({ sortValue: z.string(), id: z.string() });

function decodeCursor(raw: string | null): { sortValue: string; id: string } | null {
  if (raw === null || raw === "") return null;
  try {
    const parsed = cursorSchema.safeParse(JSON.parse(Buffer.from(raw, "base64").toString("utf8")));
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
