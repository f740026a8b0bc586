import { describe, expect, it } from "vitest";
import { safeNextPath, signInHref } from "./next-path";

describe("safeNextPath", () => {
  it.each([
    ["/runs", "/runs"],
    ["/runs?status=failed&company=co-1", "/runs?status=failed&company=co-1"],
    ["/runs/abc#proofs", "/runs/abc#proofs"],
    ["/waves/compare?a=x&b=y", "/waves/compare?a=x&b=y"],
    ["/", "/"],
  ])("keeps the same-site path %s", (raw, expected) => {
    expect(safeNextPath(raw)).toBe(expected);
  });

  it.each([
    null,
    undefined,
    "",
    "runs",
    "https://evil.example/",
    "//evil.example/x",
    "/\\evil.example",
    "\\\\evil.example",
    "/\t/evil.example",
    "/.//evil.example",
    "/%2e//evil.example",
    "javascript:alert(1)",
    "/sign-in?next=/runs",
    "/api/audit/export?format=csv",
  ])("sends %s to the overview", (raw) => {
    expect(safeNextPath(raw)).toBe("/");
  });
});

describe("signInHref", () => {
  it("remembers the page, encoded", () => {
    expect(signInHref("/runs?status=failed")).toBe("/sign-in?next=%2Fruns%3Fstatus%3Dfailed");
  });
  it("leaves out the overview and anything unsafe", () => {
    expect(signInHref("/")).toBe("/sign-in");
    expect(signInHref("https://evil.example")).toBe("/sign-in");
  });
});
