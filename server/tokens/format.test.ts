import { describe, expect, test } from "vitest";
import { hashToken, isTokenShaped, mintToken, parseLifetime } from "./format";

describe("API token format (docs/api.md)", () => {
  test("a minted token is prefixed, random, shown by its prefix only, stored by its SHA-256", () => {
    const a = mintToken();
    const b = mintToken();
    expect(a.token).toMatch(/^rw_[A-Za-z0-9_-]{43}$/);
    expect(isTokenShaped(a.token)).toBe(true);
    expect(a.token).not.toBe(b.token);
    expect(a.prefix).toBe(a.token.slice(0, 11));
    expect(a.secretHash).toBe(hashToken(a.token));
    expect(a.secretHash).toMatch(/^[0-9a-f]{64}$/);
    expect(a.secretHash).not.toContain(a.token.slice(3));
  });

  test("anything else is not token-shaped", () => {
    for (const v of ["", "rw_", "sk_live_abc", `rw_${"a".repeat(42)}`, `rw_${"a".repeat(44)}`, `rw_${"a".repeat(42)}=`]) expect(isTokenShaped(v)).toBe(false);
  });

  test("lifetimes: whole days, hours or minutes; anything else is named", () => {
    expect(parseLifetime("30d")).toEqual({ ok: true, ms: 30 * 86_400_000 });
    expect(parseLifetime("12h")).toEqual({ ok: true, ms: 12 * 3_600_000 });
    expect(parseLifetime("90m")).toEqual({ ok: true, ms: 90 * 60_000 });
    expect(parseLifetime("0d")).toEqual({ ok: false, error: "a lifetime must be at least 1" });
    expect(parseLifetime("1.5d")).toMatchObject({ ok: false, error: expect.stringContaining('"1.5d" is not a lifetime') });
    expect(parseLifetime("forever")).toMatchObject({ ok: false });
  });
});
