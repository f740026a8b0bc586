import crypto from "node:crypto";
import { z } from "zod";
import { authSecret } from "../auth/auth";
import { CONTROL_CHARACTER } from "../text";

/**
 * A keyset cursor over (createdAt desc, id desc): the last row of a page. Ordering by the
 * pair makes pages stable — rows sharing a createdAt are split by id, so none is shown
 * twice or skipped when a page boundary falls between them.
 */
export interface Keyset {
  createdAt: Date;
  id: string;
}

// A signed cursor is still checked: year 0 or a control character reached the query as a 500.
const cursorPayloadSchema = z.object({
  t: z.iso.datetime().refine((t) => {
    const year = new Date(t).getUTCFullYear();
    return year >= 1 && year <= 9999;
  }),
  id: z.string().min(1).max(200).refine((id) => !CONTROL_CHARACTER.test(id)),
});

function mac(text: string): string {
  return crypto.createHmac("sha256", authSecret()).update(`cursor:${text}`).digest("base64url").slice(0, 22);
}

/**
 * `<payload>.<mac>`: cursors are tamper-evident (docs/access.md, "What the API accepts"). A cursor is only ever one this
 * server handed out, signed with the auth secret, so a forged or edited one is refused as
 * bad input before it reaches a query.
 */
export function sealCursor(text: string): string {
  return `${Buffer.from(text, "utf8").toString("base64url")}.${mac(text)}`;
}

/** The text inside a cursor this server sealed, or null. */
export function openCursor(cursor: string): string | null {
  const dot = cursor.indexOf(".");
  if (dot < 0) return null;
  const text = Buffer.from(cursor.slice(0, dot), "base64url").toString("utf8");
  const given = Buffer.from(cursor.slice(dot + 1));
  const expected = Buffer.from(mac(text));
  return given.length === expected.length && crypto.timingSafeEqual(given, expected) ? text : null;
}

export function encodeCursor(row: Keyset): string {
  return sealCursor(JSON.stringify({ t: row.createdAt.toISOString(), id: row.id }));
}

/** The JSON inside a cursor this server sealed, read with `schema`; null for anything else. */
function openJson<T>(cursor: string, schema: z.ZodType<T>): T | null {
  const text = openCursor(cursor);
  if (text === null) return null;
  try {
    const parsed = schema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

/** Input schema for a cursor read by `decode`: a malformed one is a BAD_REQUEST naming the field. */
function cursorInputOf(decode: (cursor: string) => unknown, max = 400) {
  return z
    .string()
    .max(max)
    .refine((c) => decode(c) !== null, "not a cursor of this list (open the first page again)");
}

export function decodeCursor(cursor: string): Keyset | null {
  const k = openJson(cursor, cursorPayloadSchema);
  return k ? { createdAt: new Date(k.t), id: k.id } : null;
}

export const cursorInput = cursorInputOf(decodeCursor);

/** The Prisma condition "after this cursor" in (createdAt desc, id desc) order. */
export function afterCursor(cursor: string | undefined | null) {
  const k = cursor ? decodeCursor(cursor) : null;
  if (!k) return {};
  // The `lte` bound is what PostgreSQL can start an index range at; the OR alone is a filter
  // it checks row by row from the top of the index (975 ms at half of 1 M runs).
  return { createdAt: { lte: k.createdAt }, OR: [{ createdAt: { lt: k.createdAt } }, { createdAt: k.createdAt, id: { lt: k.id } }] };
}

/** Lists count matches up to this many and then say "10,000+", as large consoles do. */
export const COUNT_CAP = 10_000;

export const cappedTotal = {
  /** Matches over all pages, up to COUNT_CAP. */
  total: z.number().int(),
  /** True when there are more than `total`: show it as "10,000+". */
  totalCapped: z.boolean(),
};

/**
 * Counts with `take: COUNT_CAP + 1`, so the request never counts a large set exactly. Pass the
 * list's own order: Prisma otherwise orders the counted rows by id, and PostgreSQL then sorts
 * every match before the limit.
 */
export async function countCapped(count: (take: number) => Promise<number>): Promise<{ total: number; totalCapped: boolean }> {
  const n = await count(COUNT_CAP + 1);
  return n > COUNT_CAP ? { total: COUNT_CAP, totalCapped: true } : { total: n, totalCapped: false };
}

/** Splits the `take: pageSize + 1` read into the page and the next cursor. */
export function pageOf<T extends Keyset>(rows: T[], pageSize: number): { items: T[]; nextCursor: string | null } {
  const items = rows.slice(0, pageSize);
  const last = items[items.length - 1];
  return { items, nextCursor: rows.length > pageSize && last ? encodeCursor(last) : null };
}

export const PAGE_ORDER = [{ createdAt: "desc" as const }, { id: "desc" as const }];

/**
 * A page start in the orphans page's costliest-first order (server/sandboxes/inventory.ts):
 * the last row's keyset (accrued cost, hourly cost, name, id — all descending) and how many
 * rows came before it, for "showing 101–200".
 */
export interface OrphanKeyset {
  accruedCost: number;
  hourlyCost: number;
  name: string;
  id: string;
  offset: number;
}

const orphanKeysetSchema = z.object({
  a: z.number().finite(),
  h: z.number().finite(),
  n: z.string().max(200).refine((n) => !CONTROL_CHARACTER.test(n)),
  i: z.string().min(1).max(200).refine((id) => !CONTROL_CHARACTER.test(id)),
  o: z.number().int().min(0).max(10_000_000),
});

export function encodeOrphanCursor(k: OrphanKeyset): string {
  return sealCursor(JSON.stringify({ a: k.accruedCost, h: k.hourlyCost, n: k.name, i: k.id, o: k.offset }));
}

export function decodeOrphanCursor(cursor: string): OrphanKeyset | null {
  const c = openJson(cursor, orphanKeysetSchema);
  return c ? { accruedCost: c.a, hourlyCost: c.h, name: c.n, id: c.i, offset: c.o } : null;
}

// A sandbox name and id may each take 200 characters: a longer cursor than the others'.
export const orphanCursorInput = cursorInputOf(decodeOrphanCursor, 1000);
