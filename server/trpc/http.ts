import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import { writeAudit, type Actor } from "../audit/write";
import { crossSiteOrigin } from "../auth/origin";
import { sessionUser } from "../auth/users";
import type { SessionUser } from "../shared/roles";
import type { Services } from "../services";
import { db as defaultDb } from "../db";
import type { Db } from "../db/client";
import { appRouter } from "./root";
import { createTRPCContext, type Meta } from "./trpc";

/**
 * What the API accepts before any procedure runs (docs/access.md, "What the API accepts"): a larger body is a 413, deeper
 * JSON a 400, both answered without parsing the input and audited when a mutation was asked.
 */
export const API_LIMITS = {
  /** Bytes of a request body (a wave report is the largest legitimate input, well below it). */
  bodyBytes: 4 * 1024 * 1024,
  /** Nesting of objects and arrays in the input: parsers and validators recurse on it. */
  jsonDepth: 500,
} as const;

export const TRPC_ENDPOINT = "/api/trpc";

export interface TrpcHttpOptions {
  /** Defaults to the process's database; tests pass their own. */
  db?: Db;
  /** How procedures reach the provider; defaults to the services of the database. */
  services?: Services;
  /** Who is asking, instead of the session cookie (tests that are not about sign-in). */
  user?: SessionUser | null;
}

/** Deepest nesting of `[`/`{` in JSON text, counted without parsing (strings skipped). */
export function jsonDepth(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) max = Math.max(max, ++depth);
    else if (c === 0x5d || c === 0x7d) depth--;
  }
  return max;
}

type ProcedureDef = { _def: { type: string; meta?: Meta } };

/** The procedures a URL names (`/api/trpc/a.b,c.d`), whether they exist or not. */
function pathsOf(url: URL): string[] {
  const rest = url.pathname.startsWith(`${TRPC_ENDPOINT}/`) ? url.pathname.slice(TRPC_ENDPOINT.length + 1) : "";
  let decoded: string;
  try {
    decoded = decodeURIComponent(rest);
  } catch {
    decoded = rest;
  }
  return decoded.split(",").filter(Boolean);
}

/** The audited mutations among these paths (a pure one reads and writes nothing stored). */
function auditedMutations(paths: string[]): string[] {
  const procedures = appRouter._def.procedures as unknown as Record<string, ProcedureDef | undefined>;
  return paths.filter((p) => {
    const def = Object.hasOwn(procedures, p) ? procedures[p]?._def : undefined;
    return def?.type === "mutation" && def.meta?.pure !== true;
  });
}

/** An error in tRPC's own shape (superjson-wrapped), so clients read the message as usual. */
function refusal(status: 400 | 413, code: "BAD_REQUEST" | "PAYLOAD_TOO_LARGE", message: string, paths: string[]): Response {
  const one = (path: string | undefined) => ({ json: { message, code: status === 413 ? -32413 : -32600, data: { code, httpStatus: status, path: path ?? null, appCode: "INVALID_INPUT", field: null } } });
  const batch = paths.length > 1;
  return Response.json(batch ? paths.map((p) => ({ error: one(p) })) : { error: one(paths[0]) }, { status });
}

/** Who a refusal before tRPC is audited as: the signed-in person, or "anonymous". */
async function actorOf(database: Db, options: TrpcHttpOptions, req: Request): Promise<Actor> {
  const user = options.user !== undefined ? options.user : await sessionUser(database, req.headers).catch(() => null);
  return { id: user?.email ?? "anonymous", role: user?.role ?? "none" };
}

async function auditRefusal(database: Db, options: TrpcHttpOptions, req: Request, paths: string[], reason: string, detail: Record<string, unknown>): Promise<void> {
  const mutations = auditedMutations(paths);
  if (mutations.length === 0) return;
  const actor = await actorOf(database, options, req);
  for (const path of mutations) {
    await writeAudit(database, actor, { action: path, targetType: "procedure", targetId: path, outcome: "refused", detail: { reason, ...detail } }).catch((err: unknown) => {
      console.error(`audit of a refused ${path} failed:`, err);
    });
  }
}

/** Reads at most `limit` bytes of a body; null when there is more. */
async function readLimited(req: Request, limit: number): Promise<string | null> {
  const declared = Number(req.headers.get("content-length") ?? "NaN");
  if (Number.isFinite(declared) && declared > limit) return null;
  if (!req.body) return "";
  const reader = req.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => {});
      return null;
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/**
 * The tRPC endpoint as the route serves it (app/api/trpc/[trpc]/route.ts): the same-origin
 * check, the API limits, then tRPC's fetch handler. Tests drive this exact function.
 */
export async function trpcHttpHandler(req: Request, options: TrpcHttpOptions = {}): Promise<Response> {
  const database = options.db ?? defaultDb();
  const url = new URL(req.url);
  const paths = pathsOf(url);
  if (req.method === "POST") {
    const origin = crossSiteOrigin(req);
    if (origin) {
      await writeAudit(database, await actorOf(database, options, req), {
        action: "csrf.refused",
        targetType: "request",
        targetId: url.pathname,
        outcome: "refused",
        detail: { origin },
      }).catch(() => {});
      return Response.json({ error: { message: `cross-site request from ${origin} refused` } }, { status: 403 });
    }
  }

  let body: string | null = null;
  if (req.method === "POST") {
    body = await readLimited(req, API_LIMITS.bodyBytes);
    if (body === null) {
      const message = `the request body is over the limit of ${API_LIMITS.bodyBytes} bytes`;
      await auditRefusal(database, options, req, paths, message, { limit: "bodyBytes" });
      return refusal(413, "PAYLOAD_TOO_LARGE", message, paths);
    }
  }
  const input = body ?? url.searchParams.get("input") ?? "";
  if (jsonDepth(input) > API_LIMITS.jsonDepth) {
    const message = `input: nested deeper than ${API_LIMITS.jsonDepth} levels`;
    await auditRefusal(database, options, req, paths, message, { limit: "jsonDepth" });
    return refusal(400, "BAD_REQUEST", message, paths);
  }

  // The body was read to check it: tRPC gets a request holding the same bytes.
  const forwarded = body === null ? req : new Request(req.url, { method: req.method, headers: req.headers, body });
  return fetchRequestHandler({
    endpoint: TRPC_ENDPOINT,
    req: forwarded,
    router: appRouter,
    createContext: () => createTRPCContext({ headers: req.headers, db: options.db, services: options.services, user: options.user }),
    onError({ path, error }) {
      if (error.code === "INTERNAL_SERVER_ERROR") {
        console.error(`tRPC ${path ?? "?"} failed:`, error.cause ?? error);
      }
    },
  });
}
