import { z } from "zod";

/** C0 and C1 control characters and DEL: never part of a name, an id, a filter or an email. */
export const CONTROL_CHARACTER = /[\u0000-\u001f\u007f-\u009f]/;

/**
 * The one schema for free text typed by a person (docs/access.md, "What the API accepts"): at most `max` characters,
 * no control characters (PostgreSQL cannot store NUL at all, and the rest only disguise
 * what is shown), surrounding spaces trimmed, not empty. A wrong value is a 400 naming
 * the field.
 */
export function text(max: number) {
  return z
    .string()
    .max(max, `at most ${max} characters`)
    .refine((s) => !CONTROL_CHARACTER.test(s), "must not contain control characters")
    .refine((s) => !hasLoneSurrogate(s), "must be valid Unicode text")
    .trim()
    .min(1, "must not be empty");
}

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** Half of a UTF-16 pair alone: no character at all; URLs and the database cannot carry it. */
export function hasLoneSurrogate(s: string): boolean {
  return new RegExp(LONE_SURROGATE.source).test(s);
}

/** Control characters a shell command may hold: all but tab and newline (docs/access.md, "What the API accepts"; server/test/fuzz.ts). */
export const COMMAND_CONTROL_CHARACTER = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;

/**
 * A date a person or a cursor may give: years 1 to 9999. PostgreSQL has no year 0 and
 * JavaScript dates reach year 275760; outside this range a filter is a 400 naming the field.
 */
export const dateInput = z
  .date()
  .refine((d) => d.getUTCFullYear() >= 1 && d.getUTCFullYear() <= 9999, "must be a date between the years 1 and 9999");
const STORED_TEXT_MAX = 2000;

/** Keys superjson refuses to send (prototype pollution): a response holding one would be a 500. */
const UNSENDABLE_KEY = /^(__proto__|constructor|prototype)$/;

/**
 * A value an audit row can hold, and a response can carry back, whatever it is: NUL (which
 * PostgreSQL refuses in text and JSON) is kept as the visible `\u0000`, a lone surrogate
 * (refused in JSON) becomes U+FFFD, a bigint becomes its digits, the keys `__proto__`,
 * `constructor` and `prototype` are shown as `[constructor]` (found by the fuzz test: one
 * audited input holding such a key made every read of the audit log a 500), text past
 * 2,000 characters and nesting past 50 levels are cut, saying so.
 */
export function storable(value: unknown, depth = 0): unknown {
  if (typeof value === "bigint") return value.toString();
  if (typeof value === "string") {
    const safe = value.replaceAll("\u0000", "\\u0000").replace(LONE_SURROGATE, "\ufffd");
    return safe.length > STORED_TEXT_MAX ? `${safe.slice(0, STORED_TEXT_MAX)}… [${safe.length - STORED_TEXT_MAX} more characters]` : safe;
  }
  if (value === null || typeof value !== "object" || depth > 50) return depth > 50 ? "[too deep]" : value;
  if (value instanceof Date) return value;
  if (Array.isArray(value)) return value.map((v) => storable(v, depth + 1));
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [UNSENDABLE_KEY.test(k) ? `[${k}]` : (storable(k) as string), storable(v, depth + 1)]));
}
