import { describe, expect, it } from "vitest";
import { afterCursor, cursorInput, decodeCursor, encodeCursor, pageOf } from "./cursor";

describe("keyset cursor", () => {
  it("round-trips the last row's createdAt and id", () => {
    const row = { createdAt: new Date("2026-11-12T00:00:00.123Z"), id: "9f1c2d3e-0000-4000-8000-000000000001" };
    expect(decodeCursor(encodeCursor(row))).toEqual(row);
  });

  it.each(["", "not-a-cursor", Buffer.from("{}").toString("base64url"), Buffer.from(JSON.stringify({ t: "yesterday", id: "x" })).toString("base64url")])(
    "rejects %j",
    (c) => {
      expect(decodeCursor(c)).toBeNull();
      expect(cursorInput.safeParse(c).success).toBe(false);
    },
  );

  it("continues strictly after the row: older, or as old with a smaller id, bounded at the row's time", () => {
    const at = new Date("2026-11-12T00:00:00.000Z");
    expect(afterCursor(encodeCursor({ createdAt: at, id: "b" }))).toEqual({ createdAt: { lte: at }, OR: [{ createdAt: { lt: at } }, { createdAt: at, id: { lt: "b" } }] });
    expect(afterCursor(undefined)).toEqual({});
  });

  it("gives a next cursor only when a further row was read", () => {
    const rows = [1, 2, 3].map((n) => ({ createdAt: new Date(n), id: String(n) }));
    expect(pageOf(rows, 3).nextCursor).toBeNull();
    const page = pageOf(rows, 2);
    expect(page.items).toHaveLength(2);
    expect(decodeCursor(page.nextCursor!)).toEqual(rows[1]);
  });
});
