import os from "node:os";
import { describe, expect, it } from "vitest";
import { scopeOf } from "../shared/roles";
import { addUser } from "../auth/users";
import { inProcessCli } from "../test/cli";
import { withTestDatabase } from "../test/context";

/** `runwarden user …` and `run …` in-process against a real database: same rules as /users, every mutation audited. */

const t = withTestDatabase();
const MACHINE = `cli:${os.userInfo().username}`;

const cli = inProcessCli(() => t.current.db);

const lastAudit = (where: { action: string; actor?: string }) => t.current.db.auditEntry.findFirstOrThrow({ where, orderBy: { id: "desc" } });

describe("runwarden user update|disable|enable|reset-password", () => {
  it("the machine's operator changes a person, and each change is audited as the CLI actor", async () => {
    expect((await cli("user", "add", "root@example.com", "--role", "admin", "--company", "*")).code).toBe(0);
    expect((await cli("user", "add", "pat@example.com", "--role", "viewer", "--company", "co-a")).code).toBe(0);
    expect((await lastAudit({ action: "user.add" })).actor).toBe(MACHINE);

    const updated = await cli("user", "update", "pat@example.com", "--role", "board", "--company", "co-a,co-b");
    expect(updated).toEqual({ code: 0, out: "updated pat@example.com (board; companies co-a, co-b)\n", err: "" });
    expect(await lastAudit({ action: "user.update" })).toMatchObject({ actor: MACHINE, outcome: "ok" });

    expect((await cli("user", "disable", "pat@example.com")).out).toContain("disabled pat@example.com");
    expect((await t.current.db.user.findUniqueOrThrow({ where: { email: "pat@example.com" } })).disabledAt).not.toBeNull();
    expect((await cli("user", "list")).out).toMatch(/pat@example\.com\s+board\s+co-a,co-b\s+\(disabled\)/);
    expect((await cli("user", "enable", "pat@example.com")).code).toBe(0);
    expect((await t.current.db.user.findUniqueOrThrow({ where: { email: "pat@example.com" } })).disabledAt).toBeNull();

    const reset = await cli("user", "reset-password", "pat@example.com");
    expect(reset.code).toBe(0);
    const password = /new password for pat@example\.com: (\S+) {3}\(shown once\)/.exec(reset.out)?.[1];
    expect(password?.length).toBeGreaterThanOrEqual(20);
    const entry = await lastAudit({ action: "user.reset_password" });
    expect(entry).toMatchObject({ actor: MACHINE, outcome: "ok" });
    expect(JSON.stringify([entry.input, entry.detail])).not.toContain(password);
  });

  it("acting --as a company-scoped admin, the dashboard's rules hold and refusals are audited as that admin", async () => {
    await addUser(t.current.db, { email: "admin-a@example.com", role: "admin", companies: ["co-a"], password: "a long password" }, { id: "t", role: "admin" }, scopeOf(["*"]));
    await addUser(t.current.db, { email: "bea@example.com", role: "viewer", companies: ["co-b"], password: "a long password" }, { id: "t", role: "admin" }, scopeOf(["*"]));
    await addUser(t.current.db, { email: "al@example.com", role: "viewer", companies: ["co-a"], password: "a long password" }, { id: "t", role: "admin" }, scopeOf(["*"]));

    const hidden = await cli("user", "disable", "bea@example.com", "--as", "admin-a@example.com");
    expect(hidden).toEqual({ code: 1, out: "", err: "runwarden user: no person bea@example.com\n" });
    expect(await lastAudit({ action: "user.disable" })).toMatchObject({ actor: "admin-a@example.com", outcome: "refused", targetId: "bea@example.com" });

    const star = await cli("user", "update", "al@example.com", "--company", "*", "--as", "admin-a@example.com");
    expect(star.code).toBe(1);
    expect(star.err).toContain("only an admin of every company may grant *");
    expect(await lastAudit({ action: "user.update" })).toMatchObject({ actor: "admin-a@example.com", outcome: "refused" });

    expect((await cli("user", "update", "al@example.com", "--role", "operator", "--as", "admin-a@example.com")).code).toBe(0);
    // Nobody disables themselves.
    const self = await cli("user", "disable", "admin-a@example.com", "--as", "admin-a@example.com");
    expect(self.err).toContain("you cannot disable yourself");
    // A disabled admin cannot act through --as either.
    await cli("user", "disable", "admin-a@example.com");
    const gone = await cli("user", "enable", "al@example.com", "--as", "admin-a@example.com");
    expect(gone.err).toContain("admin-a@example.com is disabled");
    expect(await lastAudit({ action: "user.enable" })).toMatchObject({ outcome: "refused", actor: `${MACHINE} as admin-a@example.com` });
  });

  it("the last enabled admin of every company cannot be disabled, even by the machine's operator", async () => {
    await t.current.db.user.updateMany({ where: { email: { not: "root@example.com" }, companies: { has: "*" } }, data: { disabledAt: new Date() } });
    const r = await cli("user", "disable", "root@example.com");
    expect(r.code).toBe(1);
    expect(r.err).toContain("last enabled admin of every company");
    expect(await lastAudit({ action: "user.disable" })).toMatchObject({ actor: MACHINE, outcome: "refused", targetId: "root@example.com" });
  });
});

describe("every CLI mutation is audited, refused ones included", () => {
  it("a user add whose email does not fit is refused with exit 2 and audited", async () => {
    const before = await t.current.db.auditEntry.count();
    const r = await cli("user", "add", "not an email", "--role", "viewer", "--company", "co-a", "--password", "a secret password");
    expect(r.code).toBe(2);
    expect(r.err).toContain("email");
    expect(await t.current.db.auditEntry.count()).toBe(before + 1);
    const entry = await lastAudit({ action: "user.add" });
    expect(entry).toMatchObject({ actor: MACHINE, outcome: "refused" });
    expect(entry.input).toMatchObject({ email: "not an email", password: "[redacted]" });
  });

  it("run retry of a malformed id and run submit with a bad turn count are refused (exit 2) and audited", async () => {
    const retry = await cli("run", "retry", "not-a-uuid");
    expect(retry.code).toBe(2);
    expect(await lastAudit({ action: "run.retry" })).toMatchObject({ actor: MACHINE, role: "operator", outcome: "refused", input: { runId: "not-a-uuid" } });

    const submit = await cli("run", "submit", "--company", "co-a", "--task", "t-1", "--agent", "a", "--turns", "zero");
    expect(submit.code).toBe(2);
    expect(await lastAudit({ action: "run.submit" })).toMatchObject({ actor: MACHINE, outcome: "refused" });
  });

  it("a run submitted from the CLI is audited once, as the CLI actor", async () => {
    const r = await cli("run", "submit", "--company", "co-a", "--task", "t-ok", "--agent", "a", "--json");
    expect(r.code).toBe(0);
    const id = (JSON.parse(r.out) as { id: string }).id;
    const entries = await t.current.db.auditEntry.findMany({ where: { action: "run.submit", targetId: id } });
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ actor: MACHINE, outcome: "ok" });
  });
});
