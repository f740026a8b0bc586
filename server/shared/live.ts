// No zod here: every live page imports this file (the schema is in server/live.ts).

/**
 * The "changed since" rule of live pages (ARCHITECTURE.md, "Live pages"), pure so the browser and the tests share
 * it. A page polls one cheap reading (`live.token`) and refetches its real queries only when
 * it says something the page shows may have changed.
 *
 * A topic's value is a sequence that a trigger advances when a statement changes a row, in
 * the writer's transaction, before it commits. A reading taken between that write and its
 * commit already counts the change while the page's next fetch cannot see it yet; counted
 * only by its value, that change would never be fetched. So a reading also says how far its
 * writers may still be running (`horizon`: every writer it counts has a transaction id below
 * it; null when none was running) and how far everything has ended (`xmin`: the oldest
 * transaction still running when it was read). Once a later reading's xmin reaches the
 * horizon the page refetches once more, and sees whatever those writers committed.
 */

export const LIVE_TOPICS = ["runs", "intents", "audit", "waves"] as const;
/** How often a live page polls the token (one function call, no table read). */
export const LIVE_TOKEN_INTERVAL_MS = 3_000;
/** The slow safety refetch of a page's real queries, whatever the token says. */
export const LIVE_SAFETY_MS = 60_000;
/** What lives outside the database (the provider's sandboxes) is polled as every page once was. */
export const LIVE_POLL_MS = 4_000;
export type LiveTopic = (typeof LIVE_TOPICS)[number];

/** One `live.token` reading (its schema: `liveTokenOutput` in server/live.ts). */
export interface LiveReading {
  /** Each topic's sequence value, as text (a bigint). */
  topics: Record<LiveTopic, string>;
  /** The oldest transaction id still running when the reading was taken (a 64-bit id, as text). */
  xmin: string;
  /** Every writer the values count has an id below this one; null when no transaction was running. */
  horizon: string | null;
}

/** What a page remembers between readings: the values it has fetched after, and the horizon of writers that may still commit. */
export interface LiveState {
  seen: string;
  horizon: bigint | null;
}

/** The watched topics' values as one comparable string. */
function valuesOf(reading: LiveReading, topics: readonly LiveTopic[]): string {
  return topics.map((t) => reading.topics[t]).join(":");
}

const horizonOf = (reading: LiveReading) => (reading.horizon === null ? null : BigInt(reading.horizon));

/**
 * The next state after a reading, and whether the page refetches now. `previous` null: the
 * first reading, taken before the page's data (the page prefetches the token first), so it
 * only sets the baseline — with its horizon, since writers it counted may have been running
 * when the data was read.
 */
export function advanceLive(previous: LiveState | null, reading: LiveReading, topics: readonly LiveTopic[]): { state: LiveState; refetch: boolean } {
  const seen = valuesOf(reading, topics);
  if (previous === null) return { state: { seen, horizon: horizonOf(reading) }, refetch: false };
  // A writer below the previous horizon either ended before this reading (the refetch sees
  // it) or is still running, and then this reading's horizon covers it too.
  if (seen !== previous.seen) return { state: { seen, horizon: horizonOf(reading) }, refetch: true };
  if (previous.horizon !== null && BigInt(reading.xmin) >= previous.horizon) return { state: { seen, horizon: null }, refetch: true };
  return { state: previous, refetch: false };
}
