import pg from "pg";

const TIMESTAMPTZ = 1184;
const parseTimestamptz = pg.types.getTypeParser(TIMESTAMPTZ) as (text: string) => Date;

/**
 * PostgreSQL's text of a timestamptz in UTC (`2026-12-04 13:21:04.12+00`: the fraction's
 * trailing zeros dropped, or no fraction) as `toISOString` prints it, cut to milliseconds as
 * a parsed Date is, without making a Date (the sweep's pager reads three per row for the
 * engine's evidence, as strings). Any other form (another session time zone, a year of more
 * than four digits, BC) goes through pg's own parser and a Date.
 */
export function isoOfTimestamptz(text: string): string {
  const n = text.length;
  if (n >= 22 && n <= 29 && n !== 23 && text.charCodeAt(4) === 45 && text.charCodeAt(10) === 32 && text.endsWith("+00") && (n === 22 || text.charCodeAt(19) === 46)) {
    const ms = n === 22 ? "000" : `${text.slice(20, n - 3)}00`.slice(0, 3);
    return `${text.slice(0, 10)}T${text.slice(11, 19)}.${ms}Z`;
  }
  return parseTimestamptz(text).toISOString();
}

/** pg's type parsers, with timestamptz read as ISO strings (`readRows`' `isoTimestamps`). */
export const ISO_TIMESTAMPS = {
  getTypeParser: ((oid: number, format?: "text" | "binary") =>
    oid === TIMESTAMPTZ && format !== "binary" ? isoOfTimestamptz : pg.types.getTypeParser(oid, format ?? "text")) as pg.CustomTypesConfig["getTypeParser"],
};
