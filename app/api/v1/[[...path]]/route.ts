import { handleApiRequest } from "@/server/api/handle";

export const dynamic = "force-dynamic";

// The API's logic lives in server/api/handle.ts (docs/api.md), so tests drive the exact production path.
const handler = (req: Request) => handleApiRequest(req);

export { handler as GET, handler as POST, handler as PUT, handler as PATCH, handler as DELETE };
