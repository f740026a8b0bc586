import { describe, expect, it } from "vitest";
import { deepJson } from "../test/fuzz";
import { API_LIMITS, jsonDepth } from "./http";

describe("jsonDepth", () => {
  it("counts the deepest nesting of arrays and objects", () => {
    expect(jsonDepth("1")).toBe(0);
    expect(jsonDepth('{"a":[1,{"b":[]}],"c":{}}')).toBe(4);
    expect(jsonDepth(deepJson(API_LIMITS.jsonDepth + 1, "array"))).toBe(API_LIMITS.jsonDepth + 2);
  });

  it("skips brackets inside strings, escaped quotes included", () => {
    expect(jsonDepth('{"a":"[[[{{{"}')).toBe(1);
    expect(jsonDepth('{"a":"\\"[[[","b":"\\\\"}')).toBe(1);
  });

  it("is linear: a 4 MB body is measured in well under a second", () => {
    const text = `{"json":"${"[".repeat(API_LIMITS.bodyBytes - 20)}"}`;
    const started = performance.now();
    expect(jsonDepth(text)).toBe(1);
    expect(performance.now() - started).toBeLessThan(1000);
  });
});
