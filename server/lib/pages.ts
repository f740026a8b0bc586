/**
 * Keyset paging in id order: yields each non-empty page that `read` returns for the rows
 * after `after` (null: from the start); the next page starts after the last id of this one,
 * so rows inserted or changed meanwhile never hide the rest. `stop` is asked after each page
 * has been handled (a draining controller ends its pass between pages).
 */
export async function* pagesById<T extends { id: string }>(read: (after: string | null) => Promise<T[]>, stop: () => boolean = () => false): AsyncGenerator<T[], void, void> {
  let after: string | null = null;
  for (;;) {
    const page = await read(after);
    const last = page[page.length - 1];
    if (!last) return;
    yield page;
    after = last.id;
    if (stop()) return;
  }
}
