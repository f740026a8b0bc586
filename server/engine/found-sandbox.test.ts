import { describe, expect, it } from "vitest";
import { isTakeableFoundSandbox, TAKEABLE_SANDBOX_STATES } from "./found-sandbox";

describe("a sandbox found by its creation name after a create got no answer", () => {
  it.each(TAKEABLE_SANDBOX_STATES)("is taken when proven the intent's and %s", (state) => {
    expect(isTakeableFoundSandbox("owned", state)).toBe(true);
  });

  it.each(["stopped", "stopping", "error", "build_failed", "destroying", "destroyed", "archived", "unknown"])("is left to the sweep when %s, even if proven ours", (state) => {
    expect(isTakeableFoundSandbox("owned", state)).toBe(false);
  });

  it.each(["refused", "unrecorded"] as const)("is never taken when its ownership is %s, however up it is", (ownership) => {
    expect(isTakeableFoundSandbox(ownership, "started")).toBe(false);
  });
});
