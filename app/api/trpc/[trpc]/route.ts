import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import { writeAudit } from "@/server/audit";
import { crossSiteOrigin } from "@/server/auth/origin";
import { sessionUser } from "@/server/auth/users";
import { db } from "@/server/db";
import { appRouter } from "@/server/trpc/root";
import { createTRPCContext } from "@/server/trpc/trpc";

export const dynamic = "force-dynamic";

const handler = async (req: Request) => {
  if (req.method === "POST") {
    const origin = crossSiteOrigin(req);
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
