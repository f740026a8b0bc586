/**
 * `work` on every item, at most `limit` at once, each lane taking the next item when it is
 * done (no batches: one slow item holds back only its own lane). After a failure no lane
 * takes another item; the first failure is thrown once the items in work have ended, so
 * nothing started here outlives the call.
 */
export async function inLanes<T>(items: readonly T[], limit: number, work: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0;
  let failure: { err: unknown } | null = null;
  const lanes = Array.from({ length: Math.min(Math.max(1, limit), items.length) }, async () => {
    while (!failure && next < items.length) {
      const i = next++;
      try {
        await work(items[i]!, i);
      } catch (err) {
        failure ??= { err };
      }
    }
  });
  await Promise.all(lanes);
  if (failure) throw (failure as { err: unknown }).err;
}
