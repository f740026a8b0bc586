import type { z } from "zod";
import type { Db } from "../db/client";
import { db as defaultDb } from "../db";
import { instanceIdOf } from "../db/installation";
import { env } from "../env";
import { AppError } from "../errors";
import type { Services } from "../services";
import { authenticateToken } from "../tokens/authenticate";
import { takeApiRequest } from "../tokens/rate-limit";
import { API_LIMITS, jsonDepth } from "../trpc/http";
import { createCaller } from "../trpc/root";
import { createTRPCContext } from "../trpc/trpc";
import { apiError, apiErrorOf } from "./errors";
import { openApiDocument } from "./openapi";
import { API_ROUTES, type ApiRoute } from "./routes";

/**
 * The HTTP API at /api/v1 (docs/api.md), for programs: an API token in `Authorization: Bearer`,
 * never a session cookie; the token's own rate limit; each route's inputs parsed by its schemas;
 * then the route's tRPC procedure, called server-side as the token's principal. Every answer is
 * JSON; every failure is the one error shape (server/api/errors.ts).
 */

export const API_BASE = "/api/v1";

export interface ApiOptions {
  db?: Db;
  services?: Services;
  /** Requests a token may make a minute (default RUNWARDEN_API_RATE_LIMIT_PER_MINUTE). */
  ratePerMinute?: number;
}

function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json; charset=utf-8", "cache-control": "no-store", ...headers } });
}

const fail = (e: { status: number; body: unknown }, headers: Record<string, string> = {}) => json(e.status, e.body, headers);

/** `/runs/{id}` as a matcher of `/runs/<one segment>`, with the names of its parameters. */
function matcher(path: string): { re: RegExp; names: string[] } {
  const names: string[] = [];
  const re = new RegExp(`^${path.replace(/\{(\w+)\}/g, (_, n: string) => (names.push(n), "([^/]+)"))}$`);
  return { re, names };
}
const MATCHERS = API_ROUTES.map((r) => ({ route: r, ...matcher(r.path) }));

function findRoute(method: string, rest: string): { route: ApiRoute; params: Record<string, string> } | "method" | null {
  let pathMatched = false;
  for (const m of MATCHERS) {
    const found = m.re.exec(rest);
    if (!found) continue;
    pathMatched = true;
    if (m.route.method !== method) continue;
    const params: Record<string, string> = {};
    m.names.forEach((n, i) => {
      params[n] = decodeURIComponent(found[i + 1] ?? "");
    });
    return { route: m.route, params };
  }
  return pathMatched ? "method" : null;
}

/** The client's address as the proxy in front says it (the first X-Forwarded-For), else null. */
function addressOf(request: Request): string | null {
  return request.headers.get("x-forwarded-for")?.split(",")[0]?.trim() || request.headers.get("x-real-ip") || null;
}

async function readBody(request: Request): Promise<unknown> {
  const text = await request.text();
  if (Buffer.byteLength(text) > API_LIMITS.bodyBytes) throw new AppError("INVALID_INPUT", `body: over ${API_LIMITS.bodyBytes} bytes`);
  if (text.trim() === "") return {};
  if (jsonDepth(text) > API_LIMITS.jsonDepth) throw new AppError("INVALID_INPUT", `body: nested deeper than ${API_LIMITS.jsonDepth}`);
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new AppError("INVALID_INPUT", "body: not JSON");
  }
}

/** A request part as its schema parses it, or the error response naming the part (`path`, `query`, `body`) and the field. */
function parsed(schema: z.ZodType | undefined, value: unknown, where: string): { ok: true; value: unknown } | { ok: false; response: Response } {
  if (!schema) return { ok: true, value: undefined };
  const r = schema.safeParse(value);
  return r.success ? { ok: true, value: r.data } : { ok: false, response: fail(apiErrorOf(r.error, where)) };
}

export async function handleApiRequest(request: Request, options: ApiOptions = {}): Promise<Response> {
  const url = new URL(request.url);
  const rest = url.pathname.startsWith(API_BASE) ? url.pathname.slice(API_BASE.length) || "/" : url.pathname;
  const method = request.method.toLowerCase();
  if (method === "get" && rest === "/openapi.json") return json(200, openApiDocument());
  const found = findRoute(method, rest);
  if (found === null) return fail(apiError("NOT_FOUND", `no route ${request.method} ${API_BASE}${rest} (the routes: GET ${API_BASE}/openapi.json)`));
  if (found === "method") return fail(apiError("INVALID_INPUT", `${request.method} is not a method of ${API_BASE}${rest}`), { allow: MATCHERS.filter((m) => m.re.test(rest)).map((m) => m.route.method.toUpperCase()).join(", ") });
  const db = options.db ?? defaultDb();
  try {
    const instanceId = options.services?.instanceId ?? (await instanceIdOf(db, env.RUNWARDEN_INSTANCE_ID));
    const principal = await authenticateToken(db, instanceId, request.headers.get("authorization"), addressOf(request));
    const wait = await takeApiRequest(db, principal.tokenId, options.ratePerMinute ?? env.RUNWARDEN_API_RATE_LIMIT_PER_MINUTE);
    if (wait > 0) {
      const seconds = Math.ceil(wait / 1000);
      return fail(apiError("RATE_LIMITED", `token ${principal.prefix}… is over its ${options.ratePerMinute ?? env.RUNWARDEN_API_RATE_LIMIT_PER_MINUTE} requests a minute; try again in ${seconds} s`), { "retry-after": String(seconds) });
    }
    const { route, params } = found;
    const path = parsed(route.params, params, "path");
    if (!path.ok) return path.response;
    const query = parsed(route.query, Object.fromEntries(url.searchParams), "query");
    if (!query.ok) return query.response;
    const body = parsed(route.body, route.body && method === "post" ? await readBody(request) : {}, "body");
    if (!body.ok) return body.response;
    const input = { params: path.value ?? {}, query: query.value, body: body.value };
    const idempotencyKey = route.idempotent ? request.headers.get("idempotency-key") : null;
    const ctx = await createTRPCContext({ headers: request.headers, db, user: principal.user, ...(options.services ? { services: options.services } : {}), idempotencyKey });
    const result = await route.call(createCaller(ctx), input);
    const status = route.status(result);
    const replayed = (result as { replayed?: unknown } | null)?.replayed === true;
    return json(status, route.response.parse(result), replayed ? { "idempotent-replayed": "true" } : {});
  } catch (err) {
    const shown = apiErrorOf(err);
    if (shown.status >= 500) console.error(`api: ${request.method} ${url.pathname}:`, err);
    return fail(shown);
  }
}
