import { auditExportResponse } from "@/server/audit/read";
import { db } from "@/server/db";

export const dynamic = "force-dynamic";

/** `?format=csv|json&actor=…&action=…&outcome=…&targetType=…&targetId=…&from=…&to=…` (server/audit/read.ts). */
export function GET(request: Request) {
  return auditExportResponse(db(), request);
}
