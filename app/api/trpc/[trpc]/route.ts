import { trpcHttpHandler } from "@/server/trpc/http";

export const dynamic = "force-dynamic";

// The endpoint's logic lives in server/trpc/http.ts, so tests drive the exact production path.
const handler = (req: Request) => trpcHttpHandler(req);

export { handler as GET, handler as POST };
