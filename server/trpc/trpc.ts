import { initTRPC, TRPCError } from "@trpc/server";
import superjson from "superjson";
import { ZodError } from "zod";
import type { Actor } from "../audit";
import type { ControllerContext } from "../controller/context";
import { serviceContext } from "../controller/service";
import type { Db } from "../db/client";
import { env } from "../env";
import { db } from "../db";
import { APP_ERROR_TABLE, AppError } from "../errors";

/** Context for every procedure: the database and who is asking. */
export interface Context {
  db: Db;
  headers: Headers;
  actor: Actor;
  instanceId: string;
  /** How this process reaches the provider for sweeps and cleanups it runs itself. */
  service: () => ControllerContext;
}

// Until sign-in exists (issue 8) every caller acts as one local operator.
const LOCAL_OPERATOR: Actor = { id: "local-operator", role: "operator" };

export function createTRPCContext(opts: { headers: Headers; db?: Db; actor?: Actor; service?: ControllerContext }): Context {
  const database = opts.db ?? db();
  return {
    db: database,
    headers: opts.headers,
    actor: opts.actor ?? LOCAL_OPERATOR,
    instanceId: opts.service?.config.instanceId ?? env.RUNWARDEN_INSTANCE_ID,
    service: () => opts.service ?? serviceContext(database),
  };
}

/** `path: message` of a zod error's first issue, so a wrong input names its field. */
export function describeZodError(err: ZodError): string {
  const issue = err.issues[0];
  if (!issue) return "invalid input";
  const where = issue.path.length ? issue.path.map(String).join(".") : "input";
  return `${where}: ${issue.message}`;
}

const t = initTRPC.context<Context>().create({
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

export const createCallerFactory = t.createCallerFactory;
export const createTRPCRouter = t.router;
export const publicProcedure = t.procedure.use(mapAppErrors);
