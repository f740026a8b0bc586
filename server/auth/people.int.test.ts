import { TRPCError } from "@trpc/server";
import { describe, expect, it } from "vitest";
import { withTestDatabase } from "../test/context";
import { createCaller } from "../trpc/root";
import { createTRPCContext } from "../trpc/trpc";
import { handleAuthRequest } from "./handler";
import { disableUser, updateUser } from "./people";
import { scopeOf, type Role, type SessionUser } from "../shared/roles";
import { addUser } from "./users";

/** Changing people (docs/access.md, "People") through tRPC, with real sessions, PostgreSQL and the audit log. */

const t = withTestDatabase();
const ORIGIN = "http://localhost:3000";
const system = { id: "test:setup", role: "admin" };
let ip = 10;

async function person(email: string, role: Role, companies: string[], password = "a good long password"): Promise<SessionUser> {
  const u = await addUser(t.current.db, { email, role, companies, password }, system, { all: true });
  return { id: u.id, email: u.email, role, scope: scopeOf(companies) };
}

function signIn(email: string, password = "a good long password") {
  return handleAuthRequest(
    t.current.db,
    new Request(`${ORIGIN}/api/auth/sign-in/email`, {
      method: "POST",
      headers: { "content-type": "application/json", origin: ORIGIN, "x-forwarded-for": `192.0.2.${ip++}` },
      body: JSON.stringify({ email, password }),
    }),
  );
}

const cookieOf = (res: Response) => res.headers.getSetCookie().map((c) => c.split(";")[0]).join("; ");
const as = (user: SessionUser) => createCaller(() => createTRPCContext({ user, headers: new Headers(), db: t.current.db }));
/** A caller that is whoever the cookie says, read from the database on each request. */
const byCookie = (cookie: string) => createCaller(() => createTRPCContext({ headers: new Headers({ cookie }), db: t.current.db }));

async function code(p: Promise<unknown>) {
  const err = await p.then(() => null, (e: unknown) => e);
  return err instanceof TRPCError ? err.code : "OK";
}

async function lastAudit(action: string) {
  return t.current.db.auditEntry.findFirstOrThrow({ where: { action }, orderBy: { id: "desc" } });
}

describe("disabling a person", () => {
  it("ends their sessions at once: the cookie they hold stops working on the next request, and they cannot sign in", async () => {
    const boss = await person("boss@example.com", "admin", ["*"]);
    await person("leaver@example.com", "operator", ["co-a"]);
    const signedIn = await signIn("leaver@example.com");
    expect(signedIn.status).toBe(200);
    const cookie = cookieOf(signedIn);
    expect((await byCookie(cookie).me.get()).email).toBe("leaver@example.com");

    const disabled = await as(boss).users.disable({ user: "leaver@example.com" });
    expect(disabled.disabledAt).toBeInstanceOf(Date);
    expect(await code(byCookie(cookie).me.get())).toBe("UNAUTHORIZED");
    expect(await t.current.db.session.count({ where: { userId: disabled.id } })).toBe(0);

    // The right password no longer signs them in.
    const again = await signIn("leaver@example.com");
    expect(again.status).toBe(403);
    expect(await again.text()).toContain("disabled");
    expect(await t.current.db.session.count({ where: { userId: disabled.id } })).toBe(0);

    const entry = await lastAudit("user.disable");
    expect(entry).toMatchObject({ actor: "boss@example.com", outcome: "ok", targetType: "user", targetId: disabled.id });

    // Enabled again, they sign in; the old cookie stays dead.
    expect((await as(boss).users.enable({ user: disabled.id })).disabledAt).toBeNull();
    expect(await code(byCookie(cookie).me.get())).toBe("UNAUTHORIZED");
    const back = await signIn("leaver@example.com");
    expect(back.status).toBe(200);
    expect((await byCookie(cookieOf(back)).me.get()).email).toBe("leaver@example.com");
    expect((await lastAudit("user.enable")).outcome).toBe("ok");
  });

  it("a disabled admin's own cookie cannot act either", async () => {
    const boss = await person("boss2@example.com", "admin", ["*"]);
    await person("admin-b@example.com", "admin", ["co-b"]);
    const cookie = cookieOf(await signIn("admin-b@example.com"));
    expect((await byCookie(cookie).users.list()).length).toBeGreaterThan(0);
    await as(boss).users.disable({ user: "admin-b@example.com" });
    expect(await code(byCookie(cookie).users.add({ email: "x@example.com", role: "viewer", companies: ["co-b"] }))).toBe("UNAUTHORIZED");
    expect(await t.current.db.user.count({ where: { email: "x@example.com" } })).toBe(0);
  });
});

describe("a company-scoped admin", () => {
  it("changes role and companies of their own company's people", async () => {
    const adminA = await person("admin-a@example.com", "admin", ["co-a", "co-c"]);
    const p = await person("pa@example.com", "viewer", ["co-a"]);
    const updated = await as(adminA).users.update({ user: p.id, role: "board", companies: ["co-a", "co-c"] });
    expect(updated).toMatchObject({ email: "pa@example.com", role: "board", companies: ["co-a", "co-c"], disabledAt: null });
    const entry = await lastAudit("user.update");
    expect(entry).toMatchObject({ actor: "admin-a@example.com", outcome: "ok", targetId: p.id });
    expect(entry.input).toMatchObject({ role: "board", companies: ["co-a", "co-c"] });
  });

  it("cannot see, change, disable or reset anyone outside their companies, nor grant what they do not hold; each refusal is audited", async () => {
    const adminA = await person("admin-a2@example.com", "admin", ["co-a"]);
    await person("only-b@example.com", "operator", ["co-b"]);
    await person("a-and-b@example.com", "viewer", ["co-a", "co-b"]);
    await person("pa2@example.com", "viewer", ["co-a"]);
    const before = await t.current.db.auditEntry.count({ where: { outcome: "refused", actor: "admin-a2@example.com" } });

    // Someone of another company reads as nobody.
    expect(await code(as(adminA).users.disable({ user: "only-b@example.com" }))).toBe("NOT_FOUND");
    expect(await code(as(adminA).users.resetPassword({ user: "only-b@example.com" }))).toBe("NOT_FOUND");
    expect(await code(as(adminA).users.update({ user: "only-b@example.com", role: "viewer" }))).toBe("NOT_FOUND");
    // Someone who also holds a company this admin does not administer is out of reach.
    expect(await code(as(adminA).users.disable({ user: "a-and-b@example.com" }))).toBe("FORBIDDEN");
    expect(await code(as(adminA).users.update({ user: "a-and-b@example.com", companies: ["co-a"] }))).toBe("FORBIDDEN");
    // Granting a company they do not hold, or *, is refused.
    expect(await code(as(adminA).users.update({ user: "pa2@example.com", companies: ["co-a", "co-b"] }))).toBe("FORBIDDEN");
    expect(await code(as(adminA).users.update({ user: "pa2@example.com", companies: ["*"] }))).toBe("FORBIDDEN");

    const rows = await t.current.db.user.findMany({ where: { email: { in: ["only-b@example.com", "a-and-b@example.com", "pa2@example.com"] } }, orderBy: { email: "asc" } });
    expect(rows.map((r) => [r.email, r.role, r.companies, r.disabledAt])).toEqual([
      ["a-and-b@example.com", "viewer", ["co-a", "co-b"], null],
      ["only-b@example.com", "operator", ["co-b"], null],
      ["pa2@example.com", "viewer", ["co-a"], null],
    ]);
    const refused = await t.current.db.auditEntry.findMany({ where: { outcome: "refused", actor: "admin-a2@example.com" }, orderBy: { id: "asc" } });
    expect(refused.length - before).toBe(7);
    expect(refused.slice(-7).map((r) => r.action)).toEqual(["user.disable", "user.reset_password", "user.update", "user.disable", "user.update", "user.update", "user.update"]);
    expect((refused.at(-1)!.detail as { reason: string }).reason).toContain("only an admin of every company may grant *");

    // The list marks who they may change.
    const list = await as(adminA).users.list();
    expect(list.find((u) => u.email === "a-and-b@example.com")?.manageable).toBe(false);
    expect(list.find((u) => u.email === "pa2@example.com")?.manageable).toBe(true);
    expect(list.find((u) => u.email === "only-b@example.com")).toBeUndefined();
  });
});

describe("nobody locks everyone out", () => {
  it("the last enabled admin of every company cannot disable or demote themselves, nor lose *", async () => {
    // A fresh world: this test owns every * admin.
    await t.current.db.user.updateMany({ where: { companies: { has: "*" } }, data: { disabledAt: new Date() } });
    const root = await person("root@example.com", "admin", ["*"]);
    expect(await code(as(root).users.disable({ user: root.id }))).toBe("FORBIDDEN");
    expect(await code(as(root).users.update({ user: root.id, role: "operator" }))).toBe("CONFLICT");
    expect(await code(as(root).users.update({ user: root.id, companies: ["co-a"] }))).toBe("CONFLICT");
    // The machine's CLI operator (nobody's account) cannot disable the last one either.
    await expect(disableUser(t.current.db, { user: root.id }, { id: "cli:root", role: "admin" }, { userId: null, scope: { all: true } })).rejects.toThrow(/last enabled admin of every company/);
    const me = await t.current.db.user.findUniqueOrThrow({ where: { id: root.id } });
    expect([me.role, me.companies, me.disabledAt]).toEqual(["admin", ["*"], null]);
    expect((await lastAudit("user.update")).outcome).toBe("refused");

    // With a second one, either may step down.
    const second = await person("second@example.com", "admin", ["*"]);
    expect((await as(root).users.update({ user: root.id, role: "operator" })).role).toBe("operator");
    // …but now `second` is the last one again.
    await expect(updateUser(t.current.db, { user: second.id, companies: ["co-a"] }, { id: "cli:root", role: "admin" }, { userId: null, scope: { all: true } })).rejects.toThrow(/last enabled admin/);
    // Put the other admins of every company back for the tests after this one.
    await t.current.db.user.updateMany({ where: { email: { not: "second@example.com" }, companies: { has: "*" } }, data: { disabledAt: null } });
  });
});

describe("resetting a password", () => {
  it("returns a new password once, stores only its hash, ends their sessions, and audits without it", async () => {
    const boss = await person("boss3@example.com", "admin", ["*"]);
    await person("forgetful@example.com", "board", ["co-a"], "the old password");
    const cookie = cookieOf(await signIn("forgetful@example.com", "the old password"));
    expect((await byCookie(cookie).me.get()).email).toBe("forgetful@example.com");

    const reset = await as(boss).users.resetPassword({ user: "forgetful@example.com" });
    expect(reset.email).toBe("forgetful@example.com");
    expect(reset.password.length).toBeGreaterThanOrEqual(20);
    expect(await code(byCookie(cookie).me.get())).toBe("UNAUTHORIZED");
    expect((await signIn("forgetful@example.com", "the old password")).status).toBe(401);
    expect((await signIn("forgetful@example.com", reset.password)).status).toBe(200);

    const account = await t.current.db.account.findFirstOrThrow({ where: { userId: reset.id, providerId: "credential" } });
    expect(account.password).not.toContain(reset.password);
    const entries = await t.current.db.auditEntry.findMany({ where: { action: { in: ["user.reset_password", "users.resetPassword"] } } });
    expect(entries.filter((e) => e.outcome === "ok")).toHaveLength(1);
    expect(JSON.stringify(entries.map((e) => [e.input, e.detail, e.targetId]))).not.toContain(reset.password);

    // A second reset gives another password.
    expect((await as(boss).users.resetPassword({ user: reset.id })).password).not.toBe(reset.password);
  });
});
