import { redactUrl } from "../lib/redact";

/**
 * What an audit entry may show of its input and detail: the log and its export are open to
 * every viewer of every company (docs/access.md), so a value under a key named `…url` is shown
 * redacted (scheme, host, fingerprint: a webhook URL is its credential, docs/alerts.md
 * "Secrets") and text under a key naming a password, secret or token as `[redacted]`.
 * Applied when an entry is written (`writeAudit`) and again when one is read (`read.ts`), so
 * entries written before this rule, or by any other path, show nothing more.
 */

const URL_KEY = /url$/i;
const SECRET_KEY = /password|secret|token/i;

export function hideSecrets(value: unknown, depth = 0): unknown {
  if (value === null || typeof value !== "object" || value instanceof Date || depth > 60) return value;
  if (Array.isArray(value)) return value.map((v) => hideSecrets(v, depth + 1));
  return Object.fromEntries(
    Object.entries(value).map(([key, v]) => [key, typeof v === "string" ? (URL_KEY.test(key) ? redactUrl(v) : SECRET_KEY.test(key) ? "[redacted]" : v) : hideSecrets(v, depth + 1)]),
  );
}
