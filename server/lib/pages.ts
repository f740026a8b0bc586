/**
 * Keyset paging in id order: yields each non-empty page that `read` returns for the rows
 * after `after` (null: from the start); the next page starts after the last id of this one,
 * so rows inserted or changed meanwhile never hide the rest. `stop` is asked after each page
 * has been handled (a draining controller ends its pass between pages). With `readAhead`, the
 * next page is read while the caller handles this one (for a caller that changes no row after
 * this page's last id while it handles it); a read left in flight when paging ends is dropped.
 */
export async function* pagesById<T extends { id: string }>(
  read: (after: string | null) => Promise<T[]>,
  stop: () => boolean = () => false,
  options: { readAhead?: boolean } = {},
): AsyncGenerator<T[], void, void> {
  let next: Promise<T[]> | null = read(null);
  try {
    for (;;) {
      const page: T[] = await next;
      next = null;
      const last = page[page.length - 1];
      if (!last) return;
      if (options.readAhead) next = read(last.id);
      yield page;
      if (stop()) return;
      next ??= read(last.id);
    }
  } finally {
    // Nobody awaits it any more: its failure must not become an unhandled rejection.
    next?.catch(() => {});
  }
}
