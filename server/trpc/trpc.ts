import { initTRPC, TRPCError } from "@trpc/server";
import superjson from "superjson";
import { ZodError } from "zod";
import { writeAudit, type Actor } from "../audit";
import { roleAllows, type CompanyScope, type Role, type SessionUser } from "../auth/roles";
import { sessionUser } from "../auth/users";
import type { ControllerContext } from "../controller/context";
import { serviceContext } from "../controller/service";
import type { Db } from "../db/client";
import { env } from "../env";
import { db } from "../db";
import { instanceIdOf } from "../db/installation";
import { APP_ERROR_TABLE, AppError } from "../errors";

/** Context for every procedure: the database and who is asking. */
export interface Context {
  db: Db;
  headers: Headers;
  /** The signed-in person, or null. */
  user: SessionUser | null;
  /** This installation's instance id, read when a procedure needs it (a pure one never does). */
  instanceId: () => Promise<string>;
  /** How this process reaches the provider for sweeps and cleanups it runs itself. */
  service: () => Promise<ControllerContext>;
}

/** Every procedure declares the role it needs (see server/auth/roles.ts). */
export interface Meta {
  role: Role;
}

export async function createTRPCContext(opts: { headers: Headers; db?: Db; user?: SessionUser | null; service?: ControllerContext }): Promise<Context> {
  const database = opts.db ?? db();
  const instanceId = async () => opts.service?.config.instanceId ?? (await instanceIdOf(database, env.RUNWARDEN_INSTANCE_ID));
  return {
    db: database,
    headers: opts.headers,
    user: opts.user !== undefined ? opts.user : await sessionUser(database, opts.headers),
    instanceId,
    service: async () => opts.service ?? serviceContext(database, await instanceId()),
  };
}

/** `path: message` of a zod error's first issue, so a wrong input names its field. */
export function describeZodError(err: ZodError): string {
  const issue = err.issues[0];
  if (!issue) return "invalid input";
  const where = issue.path.length ? issue.path.map(String).join(".") : "input";
  return `${where}: ${issue.message}`;
}

const t = initTRPC.context<Context>().meta<Meta>().create({
  transformer: superjson,
  errorFormatter({ shape, error }) {
    const cause = error.cause;
    const zod = cause instanceof ZodError ? cause : null;
    return {
      ...shape,
      message: zod ? describeZodError(zod) : shape.message,
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

/** Maps AppError to its tRPC code: the one place the table is applied. */
const mapAppErrors = t.middleware(async ({ next }) => {
  const result = await next();
  if (!result.ok && result.error.cause instanceof AppError) {
    const cause = result.error.cause;
    throw new TRPCError({ code: APP_ERROR_TABLE[cause.code].trpc, message: cause.message, cause });
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
  return next({ ctx: { ...ctx, user, actor, scope: user.scope as CompanyScope } });
});

const base = t.procedure.use(mapAppErrors).use(authorize);

export const createCallerFactory = t.createCallerFactory;
export const createTRPCRouter = t.router;
export const viewerProcedure = base.meta({ role: "viewer" });
export const boardProcedure = base.meta({ role: "board" });
export const operatorProcedure = base.meta({ role: "operator" });
export const adminProcedure = base.meta({ role: "admin" });
