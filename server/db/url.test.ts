import { fc, test } from "@fast-check/vitest";
import { describe, expect, it } from "vitest";
import { databaseOf, describeUrl, hostOf, redactUrl, withDatabase } from "./url";

const password = fc.stringMatching(/^[A-Za-z0-9]{6,20}$/);
const host = fc.constantFrom("db.internal", "127.0.0.1", "pg-1.example.com");

describe("connection URL helpers", () => {
  test.prop([password, host, fc.integer({ min: 1, max: 65535 })])(
    "never print the password",
    (pw, h, port) => {
      const url = `postgresql://alice:${pw}@${h}:${port}/runwarden`;
      for (const shown of [describeUrl(url), hostOf(url), redactUrl(url)]) {
        expect(shown).not.toContain(pw);
      }
      expect(hostOf(url)).toBe(`${h}:${port}`);
    },
  );

  it("swaps the database and reads it back", () => {
    const url = withDatabase("postgresql://a:b@h:5432/one?sslmode=disable", "two");
    expect(databaseOf(url)).toBe("two");
    expect(url).toContain("sslmode=disable");
  });

  it("does not throw on garbage", () => {
    expect(describeUrl("not a url")).toMatch(/unparseable/);
  });
});
