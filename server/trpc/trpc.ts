import { initTRPC, TRPCError } from "@trpc/server";
import { getHTTPStatusCodeFromError } from "@trpc/server/http";
import superjson from "superjson";
import { ZodError } from "zod";
import type { DestinationPolicy } from "../alerts/destinations";
import { auditsWrittenBy, writeAudit, type Actor } from "../audit/write";
import { roleAllows, type CompanyScope, type Role, type SessionUser } from "../shared/roles";
import { sessionUser } from "../auth/users";
import type { Db } from "../db/client";
import { env } from "../env";
import { db } from "../db";
import { instanceIdOf } from "../db/installation";
import { APP_ERROR_TABLE, AppError } from "../errors";
import { servicesFor, type Services } from "../services";

/**
 * Context for every procedure: the database and who is asking. No controller context: what
 * reaches the provider or the controller's machinery goes through `services` (server/services).
 */
export interface Context {
  db: Db;
  headers: Headers;
  /** The signed-in person, or null. */
  user: SessionUser | null;
  /** This installation's instance id, read when a procedure needs it (a pure one never does). */
  instanceId: () => Promise<string>;
  /** The service module, built when a procedure needs the provider (sweeps, cleanups, orphans). */
  services: () => Promise<Services>;
  /** Where an alert endpoint may point (RUNWARDEN_ALERT_ALLOW_NETWORKS; server/alerts/destinations.ts). */
  alertDestinations: DestinationPolicy;
  /** The HTTP API's Idempotency-Key header (server/api/handle.ts; runs.create); null from the dashboard. */
  idempotencyKey: string | null;
}

/** Every procedure declares the role it needs (see server/shared/roles.ts). */
export interface Meta {
  role: Role;
  /** A mutation only by transport (a large POST body) that reads and writes nothing stored: not audited. */
  pure?: boolean;
}

/**
 * `services`: given by a test that brings its own provider; otherwise built on first use.
 * `alertDestinations`: given by a test whose webhook receiver listens on loopback; otherwise the environment's.
 */
export async function createTRPCContext(opts: { headers: Headers; db?: Db; user?: SessionUser | null; services?: Services; alertDestinations?: DestinationPolicy; idempotencyKey?: string | null }): Promise<Context> {
  const database = opts.db ?? db();
  const instanceId = async () => opts.services?.instanceId ?? (await instanceIdOf(database, env.RUNWARDEN_INSTANCE_ID));
  return {
    db: database,
    headers: opts.headers,
    user: opts.user !== undefined ? opts.user : await sessionUser(database, opts.headers),
    instanceId,
    services: async () => opts.services ?? servicesFor(database, await instanceId()),
    alertDestinations: opts.alertDestinations ?? { allow: env.RUNWARDEN_ALERT_ALLOW_NETWORKS },
    idempotencyKey: opts.idempotencyKey ?? null,
  };
}

/** `path: message` of a zod error's first issue, so a wrong input names its field. */
export function describeZodError(err: ZodError): string {
  const issue = err.issues[0];
  if (!issue) return "invalid input";
  const where = issue.path.length ? issue.path.map(String).join(".") : "input";
  return `${where}: ${issue.message}`;
}

/** Prisma's own error codes (P1xxx–P6xxx) look like SQLSTATEs but are not (PL/pgSQL's P0xxx are). */
const PRISMA_CODE = /^P[1-9]\d{3}$/;

/**
 * The SQLSTATE behind a database error (Prisma wraps it differently per path), or null.
 * A Prisma code on the way is skipped, not taken for the SQLSTATE: treating P2023 as one hid
 * the 22P02 under it and answered 500 for a caller's bad value (found by the fuzz test).
 */
export function sqlState(err: unknown, depth = 0): string | null {
  if (!err || typeof err !== "object" || depth > 5) return null;
  const e = err as { code?: unknown; originalCode?: unknown; meta?: unknown; cause?: unknown; message?: unknown };
  for (const c of [e.originalCode, e.code]) if (typeof c === "string" && /^[0-9A-Z]{5}$/.test(c) && !PRISMA_CODE.test(c)) return c;
  const fromMessage = typeof e.message === "string" ? /Code: `([0-9A-Z]{5})`/.exec(e.message)?.[1] : undefined;
  if (fromMessage && !PRISMA_CODE.test(fromMessage)) return fromMessage;
  return sqlState(e.meta, depth + 1) ?? sqlState((e.meta as { driverAdapterError?: unknown } | undefined)?.driverAdapterError, depth + 1) ?? sqlState(e.cause, depth + 1);
}

/**
 * The one place a failure becomes what a client sees (docs/access.md, "What the API accepts"): an AppError gets its
 * table's code and message; a value the database refused as data (SQLSTATE class 22, e.g.
 * NUL, a number out of range) is the caller's bad input, a 400; anything else unexpected
 * is a 500 with a fixed sentence. No Prisma or PostgreSQL text ever reaches a response —
 * it stays in the server log.
 */
export function publicError(error: TRPCError): TRPCError {
  const cause = error.cause;
  if (cause instanceof AppError) return new TRPCError({ code: APP_ERROR_TABLE[cause.code].trpc, message: cause.message, cause });
  if (cause instanceof ZodError) return error.message === describeZodError(cause) ? error : new TRPCError({ code: "BAD_REQUEST", message: describeZodError(cause), cause });
  if (error.code !== "INTERNAL_SERVER_ERROR") return error;
  const state = sqlState(cause);
  if (state?.startsWith("22")) {
    return new TRPCError({ code: "BAD_REQUEST", message: "input: holds a value that cannot be stored or compared (a control character, or a number or text out of range)", cause: new AppError("INVALID_INPUT", "input out of range") });
  }
  return new TRPCError({ code: "INTERNAL_SERVER_ERROR", message: "internal error; the server log has details", cause });
}

/** A failure's message as a client sees it. */
export function publicMessage(error: TRPCError): string {
  const shown = publicError(error);
  return shown.cause instanceof ZodError ? describeZodError(shown.cause) : shown.message;
}

/** Keys superjson refuses to send (prototype pollution guard): it throws, the answer is a 500. */
const UNSENDABLE_KEY = new Set(["__proto__", "constructor", "prototype"]);

/**
 * `value` with keys superjson refuses renamed to `[constructor]` etc. Stored JSON that a
 * person gave (an audited input, an imported wave report) may hold them, and one such key
 * made every read of it a 500 (found by the fuzz test). Unchanged values are returned as is.
 */
export function sendable(value: unknown): unknown {
  if (Array.isArray(value)) {
    const items = value.map(sendable);
    return items.some((v, i) => v !== value[i]) ? items : value;
  }
  if (value === null || typeof value !== "object") return value;
  const proto = Object.getPrototypeOf(value) as unknown;
  if (proto !== Object.prototype && proto !== null) return value; // Date, Map, Set…: superjson's own
  let changed = false;
  const entries = Object.entries(value).map(([k, v]) => {
    const key = UNSENDABLE_KEY.has(k) ? `[${k}]` : k;
    const inner = sendable(v);
    if (key !== k || inner !== v) changed = true;
    return [key, inner] as const;
  });
  return changed ? Object.fromEntries(entries) : value;
}

const t = initTRPC.context<Context>().meta<Meta>().create({
  transformer: {
    input: superjson,
    output: { serialize: (value: unknown) => superjson.serialize(sendable(value)), deserialize: superjson.deserialize },
  },
  errorFormatter({ shape, error }) {
    const cause = error.cause;
    const zod = cause instanceof ZodError ? cause : null;
    return {
      ...shape,
      // Errors thrown outside the procedures (parsing a request) pass here too.
      message: publicMessage(error),
      data: {
        ...shape.data,
        appCode: cause instanceof AppError ? cause.code : zod ? "INVALID_INPUT" : null,
        field: zod?.issues[0]?.path.map(String).join(".") ?? null,
        // Stack traces stay in the server log.
        stack: undefined,
      },
    };
  },
});

/** Maps errors to what a client sees (publicError): the one place the table is applied. */
const mapAppErrors = t.middleware(async ({ next }) => {
  const result = await next();
  if (!result.ok) {
    const shown = publicError(result.error);
    if (shown !== result.error) throw shown;
  }
  return result;
});

/** Input as audited: anything that looks like a secret is left out. */
function redact(input: unknown): unknown {
  if (!input || typeof input !== "object") return input;
  if (Array.isArray(input)) return input.map(redact);
  return Object.fromEntries(Object.entries(input).map(([k, v]) => [k, /password|secret|token/i.test(k) ? "[redacted]" : redact(v)]));
}

/**
 * Access is enforced here, on the server, for every procedure: signed in, and a role at
 * least the one the procedure declares. A procedure that declares none is refused. A
 * refused mutation is audited like any other.
 */
const authorize = t.middleware(async ({ ctx, meta, path, type, next, getRawInput }) => {
  const needs = meta?.role;
  if (!needs) throw new AppError("INTERNAL", `procedure ${path} declares no role`);
  const user = ctx.user;
  if (!user) throw new AppError("UNAUTHORIZED", "sign in to use Runwarden");
  const actor: Actor = { id: user.email, role: user.role };
  if (!roleAllows(user.role, needs)) {
    if (type === "mutation") {
      await writeAudit(ctx.db, actor, { action: path, targetType: "procedure", targetId: path, input: redact(await getRawInput().catch(() => null)), outcome: "refused", detail: { reason: `needs ${needs}` } });
    }
    throw new AppError("FORBIDDEN", `${path} needs the ${needs} role; you are signed in as ${user.role}`);
  }
  const result = await next({ ctx: { ...ctx, user, actor, scope: user.scope as CompanyScope } });
  // Every mutation is audited: one refused before its service ran (its input did not fit:
  // docs/access.md, "What the API accepts") or one whose service wrote nothing is audited here, once.
  if (type === "mutation" && meta?.pure !== true && auditsWrittenBy(actor) === 0) {
    const failure = result.ok ? null : publicError(result.error);
    const status = failure ? getHTTPStatusCodeFromError(failure) : 200;
    await writeAudit(ctx.db, actor, {
      action: path,
      targetType: "procedure",
      targetId: path,
      input: redact(await getRawInput().catch(() => null)),
      outcome: !failure ? "ok" : status < 500 ? "refused" : "error",
      detail: failure ? { reason: publicMessage(failure) } : undefined,
    });
  }
  return result;
});

const base = t.procedure.use(mapAppErrors).use(authorize);

export const createCallerFactory = t.createCallerFactory;
export const createTRPCRouter = t.router;
export const viewerProcedure = base.meta({ role: "viewer" });
export const boardProcedure = base.meta({ role: "board" });
export const operatorProcedure = base.meta({ role: "operator" });
export const adminProcedure = base.meta({ role: "admin" });
