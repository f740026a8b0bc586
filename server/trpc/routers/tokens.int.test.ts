import { TRPCError } from "@trpc/server";
import { describe, expect, it } from "vitest";
import { withTestDatabase } from "../../test/context";
import { testUser } from "../../test/users";
import type { SessionUser } from "../../shared/roles";
import { createCaller } from "../root";
import { createTRPCContext } from "../trpc";

/** The `tokens` router (docs/access.md, "API tokens"): admin-only, the token shown once, never listed or audited, companies a subset of the admin's. */

const t = withTestDatabase();
const caller = (user: SessionUser) => createCaller(() => createTRPCContext({ user, headers: new Headers(), db: t.current.db }));
const admin = testUser("admin");
const adminOf1 = testUser("admin", ["co-1"]);

async function code(p: Promise<unknown>) {
  const err = await p.then(() => null, (e: unknown) => e);
  return err instanceof TRPCError ? err.code : "OK";
}

/** Every audit entry's input and detail as the JSON text the table holds. */
async function auditText(): Promise<string> {
  const rows = await t.current.db.$queryRaw<{ text: string | null }[]>`SELECT string_agg(coalesce(input::text, '') || ' ' || coalesce(detail::text, ''), E'\n') AS text FROM audit_entries`;
  return rows[0]?.text ?? "";
}

describe("tokens", () => {
  it("an admin creates one (shown once), lists it without its secret, and revokes it; nothing audited holds the token", async () => {
    const created = await caller(admin).tokens.create({ name: "ci deploys", role: "operator", companies: ["co-1", "co-2"], expiresIn: "30d" });
    expect(created.token).toMatch(/^rw_[A-Za-z0-9_-]{43}$/);
    expect(created.summary).toMatchObject({ name: "ci deploys", role: "operator", companies: ["co-1", "co-2"], prefix: created.token.slice(0, 11), createdBy: admin.email, state: "active", lastUsedAt: null });
    expect(created.summary.expiresAt.getTime() - created.summary.createdAt.getTime()).toBeGreaterThan(29 * 86_400_000);

    const listed = await caller(admin).tokens.list();
    expect(listed.map((s) => s.id)).toEqual([created.summary.id]);
    expect(JSON.stringify(listed)).not.toContain(created.token);
    expect(JSON.stringify(listed)).not.toContain(created.token.slice(11));

    const revoked = await caller(admin).tokens.revoke({ id: created.summary.id });
    expect(revoked).toMatchObject({ changed: true, summary: { state: "revoked", revokedBy: admin.email } });
    expect((await caller(admin).tokens.list())[0]).toMatchObject({ id: created.summary.id, state: "revoked" });
    // Revoking again changes nothing and says so.
    expect(await caller(admin).tokens.revoke({ id: created.summary.id })).toMatchObject({ changed: false });

    const entries = await t.current.db.auditEntry.findMany({ where: { action: { in: ["token.create", "token.revoke", "tokens.create", "tokens.revoke"] } }, orderBy: { id: "asc" } });
    expect(entries.map((e) => `${e.action}:${e.outcome}`)).toEqual(["token.create:ok", "token.revoke:ok", "tokens.revoke:ok"]); // the repeat, audited by the tRPC layer (server/trpc/trpc.ts)
    expect(entries[0]!.input).toMatchObject({ name: "ci deploys", prefix: created.token.slice(0, 11) });
    const text = await auditText();
    expect(text).toContain(created.token.slice(0, 11));
    expect(text).not.toContain(created.token);
    expect(text).not.toContain(created.token.slice(11));
  });

  it("an operator is refused, and the refusal is audited", async () => {
    const op = testUser("operator");
    expect(await code(caller(op).tokens.create({ name: "sneaky", role: "viewer", companies: ["*"], expiresIn: "1d" }))).toBe("FORBIDDEN");
    expect(await code(caller(op).tokens.list())).toBe("FORBIDDEN");
    expect(await t.current.db.apiToken.count({ where: { name: "sneaky" } })).toBe(0);
    const refused = await t.current.db.auditEntry.findFirstOrThrow({ where: { action: "tokens.create", outcome: "refused" }, orderBy: { id: "desc" } });
    expect(refused).toMatchObject({ actor: op.email, role: "operator", input: { name: "sneaky" }, detail: { reason: "needs admin" } });
  });

  it("an admin of co-1 cannot grant co-2 or every company (*); each refusal is audited", async () => {
    expect(await code(caller(adminOf1).tokens.create({ name: "reach-2", role: "viewer", companies: ["co-2"], expiresIn: "1d" }))).toBe("FORBIDDEN");
    expect(await code(caller(adminOf1).tokens.create({ name: "reach-1-2", role: "viewer", companies: ["co-1", "co-2"], expiresIn: "1d" }))).toBe("FORBIDDEN");
    expect(await code(caller(adminOf1).tokens.create({ name: "reach-all", role: "viewer", companies: ["*"], expiresIn: "1d" }))).toBe("FORBIDDEN");
    expect(await t.current.db.apiToken.count({ where: { name: { startsWith: "reach-" } } })).toBe(0);
    const refused = await t.current.db.auditEntry.findMany({ where: { action: "token.create", outcome: "refused" }, orderBy: { id: "asc" } });
    expect(refused.map((r) => r.targetId)).toEqual(["reach-2", "reach-1-2", "reach-all"]);
    // Its own company it may grant; a role of admin nobody may.
    expect(await code(caller(adminOf1).tokens.create({ name: "own-1", role: "board", companies: ["co-1"], expiresIn: "12h" }))).toBe("OK");
    expect(await code(caller(admin).tokens.create({ name: "boss", role: "admin" as "viewer", companies: ["*"], expiresIn: "1d" }))).toBe("BAD_REQUEST");
  });

  it("an admin of co-1 does not see, nor revoke, a token of co-2", async () => {
    const other = await caller(admin).tokens.create({ name: "only-2", role: "viewer", companies: ["co-2"], expiresIn: "1d" });
    const seen = (await caller(adminOf1).tokens.list()).map((s) => s.name);
    expect(seen).toContain("own-1");
    expect(seen).not.toContain("only-2");
    expect(await code(caller(adminOf1).tokens.revoke({ id: other.summary.id }))).toBe("NOT_FOUND");
    expect((await caller(admin).tokens.list()).find((s) => s.id === other.summary.id)?.state).toBe("active");
  });
});
