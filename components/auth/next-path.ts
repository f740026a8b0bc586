/**
 * Where sign-in sends a person afterwards: only a path on this site. Anything else (another
 * host, a scheme, "//host", a backslash trick, the sign-in page itself, an API route) means
 * the overview.
 */
const BASE = "http://runwarden.invalid";

export function safeNextPath(raw: string | null | undefined): string {
  if (!raw || !raw.startsWith("/") || raw.startsWith("//") || raw.includes("\\")) return "/";
  let url: URL;
  try {
    url = new URL(raw, BASE);
  } catch {
    return "/";
  }
  if (url.origin !== BASE) return "/";
  const path = `${url.pathname}${url.search}${url.hash}`;
  // Dot segments can normalise to "//host", which a browser reads as another site.
  if (path.startsWith("//") || url.pathname === "/sign-in" || url.pathname.startsWith("/api/")) return "/";
  return path;
}

/** The sign-in page, remembering where to come back to. */
export function signInHref(next: string | null | undefined): string {
  const path = safeNextPath(next);
  return path === "/" ? "/sign-in" : `/sign-in?next=${encodeURIComponent(path)}`;
}
