import crypto from "node:crypto";
import type { Db } from "../db/client";
import { authFor, SIGN_IN_LIMIT } from "./auth";

/**
 * better-auth limits sign-in per client address, which it reads from X-Forwarded-For — a
 * header a client can forge on every attempt. So sign-in is also limited per account, by
 * the email being tried: guessing one person's password stays at SIGN_IN_LIMIT a minute
 * whatever address each attempt claims. Stored in `rate_limits`, shared by every process.
 */
export async function handleAuthRequest(db: Db, request: Request): Promise<Response> {
  if (request.method === "POST" && new URL(request.url).pathname.endsWith("/sign-in/email")) {
    const body = (await request.clone().json().catch(() => null)) as { email?: unknown } | null;
    const email = typeof body?.email === "string" ? body.email.trim().toLowerCase() : null;
    if (email && (await countAttempt(db, `account:${email}/sign-in/email`)) > SIGN_IN_LIMIT.max) {
      return Response.json(
        { code: "TOO_MANY_REQUESTS", message: "Too many sign-in attempts for this account; wait a minute and try again." },
        { status: 429, headers: { "retry-after": String(SIGN_IN_LIMIT.window) } },
      );
    }
  }
  return authFor(db).handler(request);
}

/** One attempt in a fixed window, counted atomically; returns the attempts in the window. */
async function countAttempt(db: Db, key: string): Promise<number> {
  const now = Date.now();
  const windowStart = now - SIGN_IN_LIMIT.window * 1000;
  const rows = await db.$queryRaw<Array<{ count: number }>>`
    INSERT INTO rate_limits (id, key, count, last_request) VALUES (${crypto.randomUUID()}, ${key}, 1, ${BigInt(now)})
    ON CONFLICT (key) DO UPDATE SET
      count = CASE WHEN rate_limits.last_request < ${BigInt(windowStart)} THEN 1 ELSE rate_limits.count + 1 END,
      last_request = CASE WHEN rate_limits.last_request < ${BigInt(windowStart)} THEN ${BigInt(now)} ELSE rate_limits.last_request END
    RETURNING count`;
  return Number(rows[0]?.count ?? 0);
}
