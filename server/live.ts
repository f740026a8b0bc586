import type { Db } from "./db/client";
import { liveTokenOutput, type LiveReading } from "./shared/live";

/**
 * `live.token`'s read model (issue 13): one call of `live_token()` (migration
 * 20261202023000_live_tokens), which reads each topic's sequence (one block each, whatever the
 * tables hold; nothing scans or locks a table) and the transaction-id bounds the page's rule
 * (`advanceLive` in shared/live.ts) needs to catch a change it read before it committed.
 */
export async function readLiveToken(db: Db): Promise<LiveReading> {
  const [row] = await db.$queryRaw<unknown[]>`
    SELECT runs::text, intents::text, audit::text, waves::text, xmin::text, horizon::text FROM live_token()`;
  const { runs, intents, audit, waves, xmin, horizon } = row as Record<string, string | null>;
  return liveTokenOutput.parse({ topics: { runs, intents, audit, waves }, xmin, horizon });
}
