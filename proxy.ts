import { NextResponse, type NextRequest } from "next/server";

/**
 * An address whose percent-encoding does not decode (`/runs/%ff`) cannot name anything.
 * Next.js would fail on it with a bare 500 while matching a dynamic route; it is answered
 * here instead: the API with a 400 JSON error in its shape (tRPC's, or /api/v1's), a page with the not-found page
 * (404, by rewriting to an address no route matches).
 */
export function proxy(request: NextRequest) {
  const path = request.nextUrl.pathname;
  try {
    decodeURIComponent(path);
    return NextResponse.next();
  } catch {
    if (path.startsWith("/api/v1/")) {
      // The HTTP API's one error shape (server/api/errors.ts; written out here: the proxy loads no server module).
      return NextResponse.json({ error: { code: "INVALID_INPUT", message: "malformed address: its percent-encoding does not decode", field: null } }, { status: 400 });
    }
    if (path.startsWith("/api/")) {
      return NextResponse.json({ error: { message: "malformed address: its percent-encoding does not decode", code: "BAD_REQUEST" } }, { status: 400 });
    }
    return NextResponse.rewrite(new URL("/_not-found-malformed-address", request.url), { status: 404 });
  }
}

export const config = {
  // Next's own assets are never malformed; everything else is looked at.
  matcher: ["/((?!_next/static|_next/image).*)"],
};
