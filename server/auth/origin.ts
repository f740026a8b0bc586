import { trustedOrigins } from "./auth";

/**
 * CSRF: a browser sends Origin with every cross-site POST, so a mutation is accepted only
 * from the dashboard's own origin — scheme, host and port all equal (docs/access.md): the
 * request's own origin, or one of the trusted ones (RUNWARDEN_PUBLIC_URL, localhost).
 * Returns the refused origin, or null when the request may proceed.
 */
export function crossSiteOrigin(req: Request): string | null {
  const origin = req.headers.get("origin");
  if (!origin) return null;
  let parsed: string;
  try {
    parsed = new URL(origin).origin;
  } catch {
    return origin;
  }
  // "null" (a sandboxed frame, a file) parses to the opaque origin "null": never ours.
  if (parsed === "null" || parsed !== origin.replace(/\/+$/, "")) return origin;
  return parsed === new URL(req.url).origin || trustedOrigins().includes(parsed) ? null : origin;
}
