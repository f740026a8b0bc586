import crypto from "node:crypto";

/**
 * What an API token looks like (docs/api.md): `rw_` and 43 base64url characters (32 random
 * bytes). The prefix makes a leaked token findable by secret scanners (as GitHub's `ghp_`,
 * Stripe's `sk_live_`); only its SHA-256 is stored, so the database cannot give it back.
 */
export const TOKEN_PREFIX = "rw_";
const TOKEN_SHAPE = /^rw_[A-Za-z0-9_-]{43}$/;
/** How much of a token a list and the audit show: `rw_` and 8 characters. */
const SHOWN = TOKEN_PREFIX.length + 8;

export function mintToken(): { token: string; prefix: string; secretHash: string } {
  const token = `${TOKEN_PREFIX}${crypto.randomBytes(32).toString("base64url")}`;
  return { token, prefix: token.slice(0, SHOWN), secretHash: hashToken(token) };
}

export function hashToken(token: string): string {
  return crypto.createHash("sha256").update(token).digest("hex");
}

export function isTokenShaped(value: string): boolean {
  return TOKEN_SHAPE.test(value);
}

/**
 * A lifetime as `30d`, `12h` or `90m` in milliseconds, or an error naming what is wrong.
 * Whole units only: a token's expiry is a decision, not arithmetic.
 */
export function parseLifetime(text: string): { ok: true; ms: number } | { ok: false; error: string } {
  const m = /^(\d{1,5})([dhm])$/.exec(text.trim());
  if (!m) return { ok: false, error: `"${text}" is not a lifetime: a whole number and d, h or m (e.g. 30d)` };
  const n = Number(m[1]);
  if (n < 1) return { ok: false, error: "a lifetime must be at least 1" };
  const unit = m[2] === "d" ? 86_400_000 : m[2] === "h" ? 3_600_000 : 60_000;
  return { ok: true, ms: n * unit };
}
