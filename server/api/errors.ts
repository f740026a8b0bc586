import { TRPCError } from "@trpc/server";
import { z, ZodError } from "zod";
import { APP_ERROR_TABLE, AppError, type AppErrorCode } from "../errors";
import { describeZodError, publicError } from "../trpc/trpc";

/**
 * The API's one error shape (docs/api.md, as Stripe's `{ error: { … } }`): a code from the error
 * table (server/errors.ts), its HTTP status, a message for a person, and the input field at
 * fault when there is one. The dashboard's tRPC errors and these come from the same table.
 */
const APP_ERROR_CODES = Object.keys(APP_ERROR_TABLE) as [AppErrorCode, ...AppErrorCode[]];

export const apiErrorSchema = z.object({
  error: z.object({
    code: z.enum(APP_ERROR_CODES),
    message: z.string(),
    /** The input field at fault (`body.turns`, `query.pageSize`), or null. */
    field: z.string().nullable(),
  }),
});
export type ApiErrorBody = z.infer<typeof apiErrorSchema>;

const BY_TRPC = new Map<string, AppErrorCode>(Object.entries(APP_ERROR_TABLE).map(([code, row]) => [row.trpc, code as AppErrorCode]));

export function apiError(code: AppErrorCode, message: string, field: string | null = null): { status: number; body: ApiErrorBody } {
  return { status: APP_ERROR_TABLE[code].http, body: { error: { code, message, field } } };
}

/** Any failure as the API answers it; `where` prefixes a field of the request's own parsing (`body`, `query`, `path`). */
export function apiErrorOf(err: unknown, where?: string): { status: number; body: ApiErrorBody } {
  if (err instanceof AppError) return apiError(err.code, err.message);
  if (err instanceof ZodError) {
    const issue = err.issues[0];
    const field = issue ? [where, ...issue.path.map(String)].filter(Boolean).join(".") : (where ?? null);
    return apiError("INVALID_INPUT", where ? `${where}.${describeZodError(err)}`.replace(/^(\w+)\.input: /, "$1: ") : describeZodError(err), field || null);
  }
  if (err instanceof TRPCError) {
    const shown = publicError(err);
    if (shown.cause instanceof AppError) return apiError(shown.cause.code, shown.message);
    if (shown.cause instanceof ZodError) return apiErrorOf(shown.cause);
    return apiError(BY_TRPC.get(shown.code) ?? "INTERNAL", shown.message);
  }
  return apiError("INTERNAL", "internal error; the server log has details");
}
