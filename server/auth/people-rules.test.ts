import { describe, expect, it } from "vitest";
import { judgePeopleChange, type Acting, type Person } from "./people-rules";

const star: Acting = { userId: "root", scope: { all: true } };
const adminA: Acting = { userId: "a", scope: { all: false, companies: ["co-a"] } };
const p = (id: string, role: string, companies: string[], disabled = false): Person => ({ id, role, companies, disabled });

describe("judgePeopleChange", () => {
  it("reads a person of other companies as absent, and one holding any other company as out of reach", () => {
    expect(judgePeopleChange(adminA, p("b", "viewer", ["co-b"]), { kind: "disable" }, 2)).toMatchObject({ ok: false, code: "NOT_FOUND" });
    expect(judgePeopleChange(adminA, null, { kind: "enable" }, 2)).toMatchObject({ ok: false, code: "NOT_FOUND" });
    expect(judgePeopleChange(adminA, p("ab", "viewer", ["co-a", "co-b"]), { kind: "reset_password" }, 2)).toMatchObject({ ok: false, code: "FORBIDDEN" });
    expect(judgePeopleChange(adminA, p("s", "admin", ["*"]), { kind: "disable" }, 2)).toMatchObject({ ok: false, code: "FORBIDDEN" });
    expect(judgePeopleChange(adminA, p("x", "viewer", ["co-a"]), { kind: "disable" }, 2)).toEqual({ ok: true });
  });

  it("grants only held companies, * only by an admin of every company", () => {
    const x = p("x", "viewer", ["co-a"]);
    expect(judgePeopleChange(adminA, x, { kind: "update", companies: ["co-a", "co-b"] }, 1)).toMatchObject({ ok: false, code: "FORBIDDEN" });
    expect(judgePeopleChange(adminA, x, { kind: "update", companies: ["*"] }, 1)).toMatchObject({ ok: false, reason: expect.stringContaining("only an admin of every company") as unknown });
    expect(judgePeopleChange(star, x, { kind: "update", companies: ["*"], role: "admin" }, 1)).toEqual({ ok: true });
    expect(judgePeopleChange(star, x, { kind: "update" }, 1)).toMatchObject({ ok: false, code: "CONFLICT" });
  });

  it("never leaves no enabled admin of every company, and nobody disables themselves", () => {
    const root = p("root", "admin", ["*"]);
    expect(judgePeopleChange(star, root, { kind: "disable" }, 2)).toMatchObject({ ok: false, reason: "you cannot disable yourself" });
    expect(judgePeopleChange(star, root, { kind: "update", role: "operator" }, 1)).toMatchObject({ ok: false, code: "CONFLICT" });
    expect(judgePeopleChange(star, root, { kind: "update", companies: ["co-a"] }, 1)).toMatchObject({ ok: false, code: "CONFLICT" });
    expect(judgePeopleChange(star, root, { kind: "update", role: "operator" }, 2)).toEqual({ ok: true });
    expect(judgePeopleChange({ userId: null, scope: { all: true } }, root, { kind: "disable" }, 1)).toMatchObject({ ok: false, code: "CONFLICT" });
    // Enabling or resetting never removes one.
    expect(judgePeopleChange(star, p("old", "admin", ["*"], true), { kind: "enable" }, 1)).toEqual({ ok: true });
    expect(judgePeopleChange(star, root, { kind: "reset_password" }, 1)).toEqual({ ok: true });
  });
});
