import { handleAuthRequest } from "@/server/auth/handler";
import { db } from "@/server/db";

export const dynamic = "force-dynamic";

const handler = (request: Request) => handleAuthRequest(db(), request);

export { handler as GET, handler as POST };
