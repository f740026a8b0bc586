import os from "node:os";
import { describe, expect, it } from "vitest";
import { addUser } from "../auth/users";
import { scopeOf } from "../shared/roles";
import { inProcessCli } from "../test/cli";
import { withTestDatabase } from "../test/context";

/** `runwarden token create|list|revoke` in-process against a real database: the dashboard's rules, the token printed once and never again. */

const t = withTestDatabase();
const MACHINE = `cli:${os.userInfo().username}`;
const cli = inProcessCli(() => t.current.db);

describe("runwarden token", () => {
  it("create prints the token once; list shows its prefix and never the token; revoke; list shows it revoked", async () => {
    const created = await cli("token", "create", "--name", "deploy bot", "--role", "operator", "--company", "co-1", "--company", "co-2", "--expires", "30d");
    expect(created.code).toBe(0);
    expect(created.err).toBe("");
    const token = /^(rw_[A-Za-z0-9_-]{43})$/m.exec(created.out)?.[1];
    expect(token).toBeDefined();
    const prefix = token!.slice(0, 11);
    expect(created.out).toContain(`created token deploy bot (operator; co-1, co-2; prefix ${prefix}; expires `);
    expect(created.out).toContain("shown once");

    const listed = await cli("token", "list");
    expect(listed.code).toBe(0);
    expect(listed.out).toMatch(new RegExp(`${prefix}…\\s+deploy bot\\s+operator\\s+active\\s+co-1,co-2\\s+by ${MACHINE}.*never used`));
    expect(listed.out).not.toContain(token);
    expect(listed.out).not.toContain(token!.slice(11));
    const json = await cli("token", "list", "--json");
    expect(JSON.parse(json.out)).toEqual([expect.objectContaining({ name: "deploy bot", prefix, state: "active" })]);
    expect(json.out).not.toContain(token!.slice(11));

    const revoked = await cli("token", "revoke", "deploy bot");
    expect(revoked).toEqual({ code: 0, out: `revoked token deploy bot (${prefix}…): its next request is refused\n`, err: "" });
    expect((await cli("token", "list")).out).toMatch(new RegExp(`${prefix}…\\s+deploy bot\\s+operator\\s+revoked`));

    const entries = await t.current.db.auditEntry.findMany({ where: { action: { startsWith: "token." } }, orderBy: { id: "asc" } });
    expect(entries.map((e) => `${e.action}:${e.outcome}:${e.actor}`)).toEqual([`token.create:ok:${MACHINE}`, `token.revoke:ok:${MACHINE}`]);
    expect(JSON.stringify(entries.map((e) => [e.input, e.detail]))).not.toContain(token!.slice(11));
  });

  it("--json prints { token, summary }; revoke by id works too", async () => {
    const r = await cli("token", "create", "--name", "json bot", "--role", "viewer", "--company", "*", "--expires", "12h", "--json");
    expect(r.code).toBe(0);
    const { token, summary } = JSON.parse(r.out) as { token: string; summary: { id: string; prefix: string; companies: string[]; state: string } };
    expect(token).toMatch(/^rw_/);
    expect(summary).toMatchObject({ prefix: token.slice(0, 11), companies: ["*"], state: "active" });
    expect((await cli("token", "revoke", summary.id)).out).toContain("revoked token json bot");
    expect((await cli("token", "revoke", summary.id)).out).toContain("was already revoked");
  });

  it("bad input exits non-zero with the reason, and is audited: a role of admin, a lifetime over the maximum, a company outside the admin's", async () => {
    const admin = await cli("token", "create", "--name", "root bot", "--role", "admin", "--company", "*", "--expires", "30d");
    expect(admin.code).toBe(2);
    expect(admin.out).toBe("");
    expect(admin.err).toContain("a token's role is viewer, board or operator (never admin)");
    expect(await t.current.db.auditEntry.findFirstOrThrow({ where: { action: "token.create" }, orderBy: { id: "desc" } })).toMatchObject({ actor: MACHINE, outcome: "refused", input: { name: "root bot", role: "admin" } });

    const long = await cli("token", "create", "--name", "long bot", "--role", "viewer", "--company", "co-1", "--expires", "9999d");
    expect(long.code).toBe(2);
    expect(long.err).toContain("longer than the most a token may last");

    await addUser(t.current.db, { email: "admin-1@example.com", role: "admin", companies: ["co-1"], password: "a long password" }, { id: "t", role: "admin" }, scopeOf(["*"]));
    const outside = await cli("token", "create", "--name", "reach bot", "--role", "viewer", "--company", "co-2", "--expires", "1d", "--as", "admin-1@example.com");
    expect(outside.code).toBe(1);
    expect(outside.err).toContain("you cannot grant a token company co-2");
    expect(await t.current.db.auditEntry.findFirstOrThrow({ where: { action: "token.create" }, orderBy: { id: "desc" } })).toMatchObject({ actor: "admin-1@example.com", outcome: "refused", targetId: "reach bot" });

    // The admin of co-1 sees only their own; a viewer cannot act --as at all.
    expect((await cli("token", "create", "--name", "own bot", "--role", "board", "--company", "co-1", "--expires", "1d", "--as", "admin-1@example.com")).code).toBe(0);
    const theirs = await cli("token", "list", "--as", "admin-1@example.com");
    expect(theirs.out).toContain("own bot");
    expect(theirs.out).not.toContain("deploy bot");
    await addUser(t.current.db, { email: "viewer-1@example.com", role: "viewer", companies: ["co-1"], password: "a long password" }, { id: "t", role: "admin" }, scopeOf(["*"]));
    const viewer = await cli("token", "revoke", "own bot", "--as", "viewer-1@example.com");
    expect(viewer.code).toBe(1);
    expect(viewer.err).toContain("token.revoke needs the admin role");
    expect(await t.current.db.apiToken.count({ where: { name: { in: ["root bot", "long bot", "reach bot"] } } })).toBe(0);
  });
});
