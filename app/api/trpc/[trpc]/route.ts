import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import { writeAudit } from "@/server/audit";
import { trustedOrigins } from "@/server/auth/auth";
import { sessionUser } from "@/server/auth/users";
import { db } from "@/server/db";
import { appRouter } from "@/server/trpc/root";
import { createTRPCContext } from "@/server/trpc/trpc";

export const dynamic = "force-dynamic";

/**
 * CSRF: a browser sends Origin with every cross-site POST, so a mutation is accepted only
 * from the dashboard's own origin. (Cookies are SameSite=Lax as well.)
 */
function crossSite(req: Request): string | null {
  const origin = req.headers.get("origin");
  if (!origin) return null;
  let host: string;
  try {
    host = new URL(origin).host;
  } catch {
    return origin;
  }
  return host === req.headers.get("host") || trustedOrigins().includes(origin) ? null : origin;
}

const handler = async (req: Request) => {
  if (req.method === "POST") {
    const origin = crossSite(req);
    if (origin) {
      const user = await sessionUser(db(), req.headers).catch(() => null);
      await writeAudit(db(), { id: user?.email ?? "anonymous", role: user?.role ?? "none" }, {
        action: "csrf.refused",
        targetType: "request",
        targetId: new URL(req.url).pathname,
        outcome: "refused",
        detail: { origin },
      }).catch(() => {});
      return Response.json({ error: { message: `cross-site request from ${origin} refused` } }, { status: 403 });
    }
  }
  return fetchRequestHandler({
    endpoint: "/api/trpc",
    req,
    router: appRouter,
    createContext: () => createTRPCContext({ headers: req.headers }),
    onError({ path, error }) {
      if (error.code === "INTERNAL_SERVER_ERROR") {
        console.error(`tRPC ${path ?? "?"} failed:`, error.cause ?? error);
      }
    },
  });
};

export { handler as GET, handler as POST };
