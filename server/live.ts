import { Prisma, readRows, type Db } from "./db/client";
import { z } from "zod";
import { LIVE_TOPICS, type LiveReading, type LiveTopic } from "./shared/live";

const counter = z.string().regex(/^\d+$/);
/** `live.token`'s output: a `LiveReading`. */
export const liveTokenOutput = z.object({
  topics: z.object(Object.fromEntries(LIVE_TOPICS.map((t) => [t, counter])) as Record<LiveTopic, typeof counter>),
  xmin: counter,
  horizon: counter.nullable(),
}) satisfies z.ZodType<LiveReading>;

/**
 * `live.token`'s read model (ARCHITECTURE.md, "Live pages"): one call of `live_token()` (migration
 * 20261202023000_live_tokens), which reads each topic's sequence (one block each, whatever the
 * tables hold; nothing scans or locks a table) and the transaction-id bounds the page's rule
 * (`advanceLive` in shared/live.ts) needs to catch a change it read before it committed.
 */
export async function readLiveToken(db: Db): Promise<LiveReading> {
  // Every open page asks every few seconds: straight to the pool (readRows), not through Prisma.
  const [row] = await readRows<Record<string, string | null>>(
    db,
    Prisma.sql`SELECT runs::text, intents::text, audit::text, waves::text, xmin::text, horizon::text FROM live_token()`,
  );
  const { runs, intents, audit, waves, xmin, horizon } = row ?? {};
  return liveTokenOutput.parse({ topics: { runs, intents, audit, waves }, xmin, horizon });
}
