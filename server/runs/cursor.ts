import { z } from "zod";

/**
 * A keyset cursor over (createdAt desc, id desc): the last row of a page. Ordering by the
 * pair makes pages stable — rows sharing a createdAt are split by id, so none is shown
 * twice or skipped when a page boundary falls between them.
 */
export interface Keyset {
  createdAt: Date;
  id: string;
}

const payload = z.object({ t: z.iso.datetime(), id: z.string().min(1).max(200) });

export function encodeCursor(row: Keyset): string {
  return Buffer.from(JSON.stringify({ t: row.createdAt.toISOString(), id: row.id }), "utf8").toString("base64url");
}

export function decodeCursor(cursor: string): Keyset | null {
  try {
    const parsed = payload.safeParse(JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")));
    return parsed.success ? { createdAt: new Date(parsed.data.t), id: parsed.data.id } : null;
  } catch {
    return null;
  }
}

/** Input schema for a cursor: a malformed one is a BAD_REQUEST naming the field. */
export const cursorInput = z
  .string()
  .max(400)
  .refine((c) => decodeCursor(c) !== null, "not a cursor of this list (open the first page again)");

/** The Prisma condition "after this cursor" in (createdAt desc, id desc) order. */
export function afterCursor(cursor: string | undefined | null) {
  const k = cursor ? decodeCursor(cursor) : null;
  if (!k) return {};
  return { OR: [{ createdAt: { lt: k.createdAt } }, { createdAt: k.createdAt, id: { lt: k.id } }] };
}

/** Splits the `take: pageSize + 1` read into the page and the next cursor. */
export function pageOf<T extends Keyset>(rows: T[], pageSize: number): { items: T[]; nextCursor: string | null } {
  const items = rows.slice(0, pageSize);
  const last = items[items.length - 1];
  return { items, nextCursor: rows.length > pageSize && last ? encodeCursor(last) : null };
}

export const PAGE_ORDER = [{ createdAt: "desc" as const }, { id: "desc" as const }];
