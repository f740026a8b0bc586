import crypto from "node:crypto";
import { describe, expect, it } from "vitest";
import { isUuid, uuidSchema } from "./ids";

describe("the one id pattern", () => {
  it("takes a UUID in either case and nothing PostgreSQL's uuid type would reject", () => {
    const id = crypto.randomUUID();
    expect(isUuid(id)).toBe(true);
    expect(isUuid(id.toUpperCase())).toBe(true);
    expect(isUuid("00000000-0000-0000-0000-000000000001")).toBe(true);
    for (const bad of ["probe-run-1", "-".repeat(36), `${id}x`, id.slice(1), ""]) expect(isUuid(bad)).toBe(false);
  });

  it("the input schema is zod's UUID", () => {
    expect(uuidSchema.safeParse(crypto.randomUUID()).success).toBe(true);
    expect(uuidSchema.safeParse("not-a-uuid").success).toBe(false);
  });
});
