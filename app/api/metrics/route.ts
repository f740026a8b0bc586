import { db } from "@/server/db";
import { renderMetrics } from "@/server/metrics";

export const dynamic = "force-dynamic";

/** Prometheus metrics, computed from the database every controller writes to. */
export async function GET() {
  try {
    const { body, contentType } = await renderMetrics(db());
    return new Response(body, { headers: { "content-type": contentType, "cache-control": "no-store" } });
  } catch (err) {
    return new Response(`# metrics unavailable: ${err instanceof Error ? err.message : String(err)}\n`, { status: 503 });
  }
}
