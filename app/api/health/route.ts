import { db } from "@/server/db";
import { env } from "@/server/env";
import { healthResponse, readinessSources } from "@/server/readiness";

// Read on every request: a cached answer would say a part is up after it went down.
export const dynamic = "force-dynamic";

/**
 * 200 when the database, a controller and the emulator (unless Daytona is the provider) are up,
 * else 503 naming the parts down (server/readiness.ts). No sign-in: a process manager calls it,
 * and it says nothing but the parts' names and states. Not under app/(console), whose layout
 * sends a visitor without a session to /sign-in; proxy.ts lets every well-formed address through.
 */
export function GET() {
  return healthResponse(readinessSources(db(), env));
}
