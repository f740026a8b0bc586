import crypto from "node:crypto";
import { Webhook } from "standardwebhooks";

/**
 * Standard Webhooks signing (https://www.standardwebhooks.com): `webhook-signature` is
 * `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`. A secret written `whsec_<base64>` (what
 * Runwarden generates) is that key's bytes, as the spec says; any other secret (one pasted by
 * an admin) is its UTF-8 bytes.
 */

export const SECRET_PREFIX = "whsec_";

function signer(secret: string): Webhook {
  return secret.startsWith(SECRET_PREFIX) ? new Webhook(secret) : new Webhook(Buffer.from(secret, "utf8"), { format: "raw" });
}

/** A new signing secret: 24 random bytes, `whsec_`-prefixed base64. */
export function newSecret(): string {
  return `${SECRET_PREFIX}${crypto.randomBytes(24).toString("base64")}`;
}

/** Refuses a secret the signer cannot use (a `whsec_` one that is not base64, or an empty one). */
export function checkSecret(secret: string): string | null {
  if (secret.startsWith(SECRET_PREFIX) && !/^[A-Za-z0-9+/]+={0,2}$/.test(secret.slice(SECRET_PREFIX.length))) return "a whsec_ secret must be base64 after the prefix";
  try {
    signer(secret);
    return null;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

/** The three headers of one attempt; `id` stays the same on every retry of a delivery. */
export function signedHeaders(secret: string, id: string, at: Date, body: string): Record<"webhook-id" | "webhook-timestamp" | "webhook-signature", string> {
  return {
    "webhook-id": id,
    "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
    "webhook-signature": signer(secret).sign(id, at, body),
  };
}

/** What a receiver does (the README's snippet, and the tests): throws when the signature or timestamp is wrong. */
export function verifySigned(secret: string, body: string, headers: Record<string, string>): unknown {
  return signer(secret).verify(body, headers);
}
