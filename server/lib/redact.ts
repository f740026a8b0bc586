import crypto from "node:crypto";

/**
 * Showing a secret without showing it: a short fingerprint that tells two values apart (and
 * lets an admin match an audit entry to an endpoint), and a URL cut down to what is not its
 * credential. A Slack incoming webhook's URL *is* its credential (docs/alerts.md "Secrets").
 */

/** The first 8 hex digits of the SHA-256 of `text`. */
export function fingerprint(text: string): string {
  return crypto.createHash("sha256").update(text, "utf8").digest("hex").slice(0, 8);
}

const REDACTED_URL = /^(?:https?:\/\/[^\s/?#@]*\/)?…#[0-9a-f]{8}$/;

/** Already in the form `redactUrl` gives (so redacting twice changes nothing). */
export function isRedactedUrl(text: string): boolean {
  return REDACTED_URL.test(text);
}

/**
 * `https://hooks.slack.com/…#a1b2c3d4`: the scheme and host (with its port; never a user,
 * password, path, query or fragment) and the fingerprint of the whole URL. Anything that is
 * not an http(s) URL shows as `…#a1b2c3d4` alone.
 */
export function redactUrl(url: string): string {
  if (isRedactedUrl(url)) return url;
  const mark = `…#${fingerprint(url)}`;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return mark;
  }
  return (parsed.protocol === "http:" || parsed.protocol === "https:") && parsed.host !== "" ? `${parsed.protocol}//${parsed.host}/${mark}` : mark;
}
