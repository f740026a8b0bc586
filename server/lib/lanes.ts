/**
 * Work on many items, a few at a time: one pool of lanes (`lanePool`) for items that arrive
 * while the lanes work (the creation-intent sweep's pager feeding due batches), and `inLanes`
 * on it for a list known up front (the sweeps' teardowns and late looks, an operator's reclaim).
 */

/** A pool of at most `limit` lanes: `push` an item as it comes, `drain` when there are no more. */
export interface LanePool<T> {
  /** Waits for a free lane (the feeder slows to the lanes' pace), then starts `item`; throws the first failure instead. */
  push(item: T): Promise<void>;
  /** Waits for every item in work, then throws the first failure, if any. */
  drain(): Promise<void>;
}

/**
 * At most `limit` items in work at once; `push` waits for a free lane. The first failure is
 * thrown by the next `push` or by `drain`: after it, no lane takes another item.
 */
export function lanePool<T>(limit: number, work: (item: T) => Promise<void>): LanePool<T> {
  const lanes = Math.max(1, limit);
  const running = new Set<Promise<void>>();
  let failure: { err: unknown } | null = null;
  const rethrow = () => {
    if (failure) throw failure.err;
  };
  return {
    async push(item) {
      while (running.size >= lanes) await Promise.race(running);
      rethrow();
      // Called in an async function: a `work` that throws before its first await fails its lane, not `push`.
      const lane: Promise<void> = (async () => work(item))()
        .catch((err: unknown) => {
          failure ??= { err };
        })
        .finally(() => running.delete(lane));
      running.add(lane);
    },
    async drain() {
      while (running.size > 0) await Promise.race(running);
      rethrow();
    },
  };
}

/**
 * `work` on every item, at most `limit` at once, each lane taking the next item when it is
 * done (no batches: one slow item holds back only its own lane). After a failure no lane
 * takes another item; the first failure is thrown once the items in work have ended, so
 * nothing started here outlives the call.
 */
export async function inLanes<T>(items: readonly T[], limit: number, work: (item: T, index: number) => Promise<void>): Promise<void> {
  const pool = lanePool<number>(limit, (i) => work(items[i]!, i));
  try {
    for (let i = 0; i < items.length; i++) await pool.push(i);
  } catch {
    // The pool's first failure: `drain` throws it again once the items in work have ended.
  }
  await pool.drain();
}
