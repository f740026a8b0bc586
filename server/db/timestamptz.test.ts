import pg from "pg";
import { describe, expect, it } from "vitest";
import { isoOfTimestamptz } from "./timestamptz";

const parse = pg.types.getTypeParser(1184) as (text: string) => Date;
// Every millisecond, and every seventh microsecond.
const fractions = [...Array.from({ length: 1000 }, (_, ms) => ms * 1000), ...Array.from({ length: 1_000_000 / 7 }, (_, i) => i * 7 + 1)];

describe("isoOfTimestamptz", () => {
  it("prints what a Date parsed from PostgreSQL's UTC text prints, for every fraction PostgreSQL writes", () => {
    const days = ["2026-12-04 13:21:04", "2024-02-29 00:00:00", "1999-12-31 23:59:59", "1970-01-01 00:00:00", "2038-01-19 03:14:07"];
    let checked = 0;
    for (const day of days) {
      // As PostgreSQL prints them: trailing zeros dropped, no fraction for a whole second.
      for (const us of fractions) {
        const fraction = String(us).padStart(6, "0").replace(/0+$/, "");
        const text = `${day}${fraction ? `.${fraction}` : ""}+00`;
        const iso = isoOfTimestamptz(text);
        if (iso !== new Date(text).toISOString() || iso !== parse(text).toISOString()) {
          expect({ text, iso }).toEqual({ text, iso: new Date(text).toISOString() });
        }
        checked += 1;
      }
    }
    expect(checked).toBeGreaterThan(100_000);
    expect(isoOfTimestamptz("2026-12-04 13:21:04.1+00")).toBe("2026-12-04T13:21:04.100Z");
    expect(isoOfTimestamptz("2026-12-04 13:21:04.000999+00")).toBe("2026-12-04T13:21:04.000Z");
    expect(isoOfTimestamptz("2026-12-04 13:21:04+00")).toBe("2026-12-04T13:21:04.000Z");
  });

  it("reads the other forms (other offsets, long years, BC) as pg's parser does", () => {
    const forms = [
      "2026-12-04 13:21:04.123+01",
      "2026-12-04 13:21:04.5-08",
      "2026-12-04 13:21:04+05:30",
      "2026-12-04 13:21:04.123456-03:30",
      "2026-12-04 00:30:00+00:30",
      "12026-12-04 13:21:04.12+00",
      "0044-03-15 12:00:00+00 BC",
      "0001-01-01 00:00:00+00",
    ];
    for (const text of forms) expect({ text, iso: isoOfTimestamptz(text) }).toEqual({ text, iso: parse(text).toISOString() });
    // Where V8 reads the form too, it agrees.
    for (const text of forms.slice(0, 5)) expect({ text, iso: isoOfTimestamptz(text) }).toEqual({ text, iso: new Date(text).toISOString() });
  });
});
