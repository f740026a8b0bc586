import { db } from "@/server/db";
import { metricsResponse } from "@/server/metrics";

export const dynamic = "force-dynamic";

/** Prometheus metrics, computed from the database every controller writes to. */
export function GET(request: Request) {
  return metricsResponse(db(), request);
}
