import { TRPCError } from "@trpc/server";
import superjson from "superjson";
import { describe, expect, it } from "vitest";
import { publicError, sendable, sqlState } from "./trpc";

describe("sqlState", () => {
  it("skips Prisma's own codes on the way to the SQLSTATE under them (the fuzz test's 500s)", () => {
    const prismaShaped = { code: "P2023", message: "Inconsistent column data", meta: { driverAdapterError: { cause: { originalCode: "22P02", kind: "postgres" } } } };
    expect(sqlState(prismaShaped)).toBe("22P02");
    expect(sqlState({ code: "P2010", message: "Raw query failed. Code: `P2033`" })).toBeNull();
  });

  it("keeps PostgreSQL's own P0xxx codes (PL/pgSQL)", () => {
    expect(sqlState({ cause: { originalCode: "P0001" } })).toBe("P0001");
  });

  it("a data exception under a Prisma code is the caller's 400, anything else a 500 without detail", () => {
    const bad = publicError(new TRPCError({ code: "INTERNAL_SERVER_ERROR", cause: Object.assign(new Error("x"), { code: "P2023", meta: { driverAdapterError: { cause: { originalCode: "22008" } } } }) }));
    expect(bad.code).toBe("BAD_REQUEST");
    const other = publicError(new TRPCError({ code: "INTERNAL_SERVER_ERROR", cause: Object.assign(new Error("prisma detail"), { code: "P2024" }) }));
    expect(other.code).toBe("INTERNAL_SERVER_ERROR");
    expect(other.message).not.toMatch(/prisma/i);
  });
});

describe("sendable", () => {
  it("renames the keys superjson refuses, so the answer can be sent", () => {
    const stored = JSON.parse('{"a":[{"constructor":{"prototype":1}}],"__proto__":{"x":1},"at":"t"}') as unknown;
    expect(() => superjson.serialize(stored)).toThrow(/prototype pollution/);
    const shown = sendable(stored);
    expect(superjson.serialize(shown).json).toEqual({ a: [{ "[constructor]": { "[prototype]": 1 } }], "[__proto__]": { x: 1 }, at: "t" });
  });

  it("returns values without such keys as they are, Dates and bigints included", () => {
    const value = { at: new Date(0), n: 1n, list: [1, { a: "b" }] };
    expect(sendable(value)).toBe(value);
  });
});
