import type { TRPC_ERROR_CODE_KEY } from "@trpc/server";

/**
 * Runwarden's written error type. Code → tRPC code and HTTP status, in one table; the
 * tRPC layer maps it in one place (server/trpc/trpc.ts).
 */
export const APP_ERROR_TABLE = {
  NOT_FOUND: { trpc: "NOT_FOUND", http: 404, meaning: "the object does not exist (or is not visible to you)" },
  INVALID_INPUT: { trpc: "BAD_REQUEST", http: 400, meaning: "the input does not fit the contract" },
  CONFLICT: { trpc: "CONFLICT", http: 409, meaning: "the object changed state; reload and try again" },
  PRECONDITION_FAILED: { trpc: "PRECONDITION_FAILED", http: 412, meaning: "the action is not allowed in the object's state" },
  UNAUTHORIZED: { trpc: "UNAUTHORIZED", http: 401, meaning: "sign in first" },
  FORBIDDEN: { trpc: "FORBIDDEN", http: 403, meaning: "your role does not allow this" },
  RATE_LIMITED: { trpc: "TOO_MANY_REQUESTS", http: 429, meaning: "too many requests; wait as Retry-After says" },
  PROVIDER_ERROR: { trpc: "BAD_GATEWAY", http: 502, meaning: "the sandbox provider failed or answered garbage" },
  UNAVAILABLE: { trpc: "SERVICE_UNAVAILABLE", http: 503, meaning: "a dependency (database, provider) is unreachable" },
  INTERNAL: { trpc: "INTERNAL_SERVER_ERROR", http: 500, meaning: "a bug; the log has details" },
} as const satisfies Record<string, { trpc: TRPC_ERROR_CODE_KEY; http: number; meaning: string }>;

export type AppErrorCode = keyof typeof APP_ERROR_TABLE;

export class AppError extends Error {
  override name = "AppError";
  constructor(
    public readonly code: AppErrorCode,
    message: string,
    public readonly details?: Record<string, unknown>,
  ) {
    super(message);
  }

  static is(err: unknown): err is AppError {
    return err instanceof AppError;
  }
}
