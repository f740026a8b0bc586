import crypto from "node:crypto";
import type { Db } from "../db/client";
import { authFor, authSecret, publicUrl, SIGN_IN_BACKOFF } from "./auth";

/**
 * Sign-in throttling (docs/access.md), in front of better-auth, for every attempt:
 * - Only JSON bodies are accepted (the dashboard sends JSON); any other encoding is refused
 *   with 415 before better-auth sees it, so no attempt escapes the count.
 * - Attempts back off exponentially per key: after `free` attempts since the key's last
 *   success, each next attempt waits 1 s, 2 s, 4 s … (at most `maxMs`) after the previous.
 *   Keys: the (account, address) pair, the address, and the account. The address comes from
 *   X-Forwarded-For, which a client can forge, so the account's key is what really slows
 *   guessing one person's password.
 * - A browser that has signed in to the account before carries a signed device cookie; its
 *   attempts are counted per (account, device) only, so strangers hammering the account
 *   never hold its owner out. (OWASP's "device cookies".)
 * Counters live in `rate_limits`, shared by every dashboard process.
 */
export async function handleAuthRequest(db: Db, request: Request): Promise<Response> {
  if (request.method !== "POST" || !new URL(request.url).pathname.endsWith("/sign-in/email")) return authFor(db).handler(request);

  const type = (request.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
  if (type !== "application/json") {
    return Response.json({ code: "UNSUPPORTED_MEDIA_TYPE", message: "sign-in takes a JSON body (content-type: application/json)" }, { status: 415 });
  }
  const body = (await request.clone().json().catch(() => null)) as { email?: unknown } | null;
  const email = typeof body?.email === "string" ? body.email.trim().toLowerCase() : null;
  // Without an email better-auth refuses the request without looking at any password.
  if (!email) return authFor(db).handler(request);

  const device = deviceOf(request.headers.get("cookie"), email);
  const address = (request.headers.get("x-forwarded-for") ?? request.headers.get("x-real-ip") ?? "unknown").split(",")[0]!.trim() || "unknown";
  const keys = device ? [`signin:device:${email}|${device}`] : [`signin:pair:${email}|${address}`, `signin:address:${address}`, `signin:account:${email}`];
  for (const key of keys) {
    const wait = await reserveAttempt(db, key);
    if (wait > 0) {
      return Response.json(
        { code: "TOO_MANY_REQUESTS", message: `Too many sign-in attempts; try again in ${Math.ceil(wait / 1000)} s.` },
        { status: 429, headers: { "retry-after": String(Math.ceil(wait / 1000)) } },
      );
    }
  }
  const response = await authFor(db).handler(request);
  if (response.status !== 200) return response;
  // A success clears this client's own counters (not the account's: strangers' attempts still count) …
  await db.rateLimit.deleteMany({ where: { key: { in: keys.filter((k) => !k.startsWith("signin:account:")) } } });
  // … and marks this browser as one the owner uses.
  const out = new Response(response.body, response);
  out.headers.append("set-cookie", deviceCookie(email, device ?? crypto.randomBytes(12).toString("base64url")));
  return out;
}

/**
 * Counts one attempt on `key` unless it is inside its back-off; returns 0 when counted, or
 * the milliseconds left to wait. One atomic statement, so parallel attempts cannot all pass.
 */
async function reserveAttempt(db: Db, key: string): Promise<number> {
  const { free, maxMs, resetMs } = SIGN_IN_BACKOFF;
  const now = BigInt(Date.now());
  const stale = now - BigInt(resetMs);
  const rows = await db.$queryRaw<Array<{ count: number }>>`
    INSERT INTO rate_limits (id, key, count, last_request) VALUES (${crypto.randomUUID()}, ${key}, 1, ${now}::bigint)
    ON CONFLICT (key) DO UPDATE SET
      count = CASE WHEN rate_limits.last_request < ${stale}::bigint THEN 1 ELSE rate_limits.count + 1 END,
      last_request = ${now}::bigint
    WHERE rate_limits.last_request < ${stale}::bigint
       OR rate_limits.count < ${free}::int
       OR rate_limits.last_request + LEAST(1000 * power(2, rate_limits.count - ${free}::int), ${maxMs}::int)::bigint <= ${now}::bigint
    RETURNING count`;
  if (rows.length > 0) return 0;
  const row = await db.rateLimit.findUnique({ where: { key } });
  if (!row) return 0;
  const wait = Math.min(1000 * 2 ** (row.count - free), maxMs);
  return Math.max(1, Number(row.lastRequest) + wait - Number(now));
}

const DEVICE_COOKIE = "runwarden.device";

function sign(payload: string): string {
  return crypto.createHmac("sha256", authSecret()).update(`device:${payload}`).digest("base64url");
}

/** `email|nonce|signature`, base64url; HTTP-only, sent to the auth endpoints only. */
function deviceCookie(email: string, nonce: string): string {
  const payload = `${email}|${nonce}`;
  const value = Buffer.from(`${payload}|${sign(payload)}`).toString("base64url");
  const secure = publicUrl().startsWith("https://") ? "; Secure" : "";
  return `${DEVICE_COOKIE}=${value}; Path=/api/auth; Max-Age=${60 * 60 * 24 * 365}; HttpOnly; SameSite=Lax${secure}`;
}

/** The device nonce of a valid device cookie for `email`, or null. */
function deviceOf(cookieHeader: string | null, email: string): string | null {
  const raw = cookieHeader?.split(";").map((c) => c.trim()).find((c) => c.startsWith(`${DEVICE_COOKIE}=`))?.slice(DEVICE_COOKIE.length + 1);
  if (!raw) return null;
  const parts = Buffer.from(raw, "base64url").toString("utf8").split("|");
  if (parts.length !== 3) return null;
  const [who, nonce, signature] = parts as [string, string, string];
  const expected = sign(`${who}|${nonce}`);
  if (who !== email || signature.length !== expected.length || !crypto.timingSafeEqual(Buffer.from(signature), Buffer.from(expected))) return null;
  return nonce;
}
