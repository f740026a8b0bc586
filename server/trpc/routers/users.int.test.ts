import { TRPCError } from "@trpc/server";
import { describe, expect, it } from "vitest";
import { withTestDatabase } from "../../test/context";
import { testUser } from "../../test/users";
import type { SessionUser } from "../../shared/roles";
import { createCaller } from "../root";
import { createTRPCContext } from "../trpc";

/** Company scope (docs/access.md, "People"): a company-scoped admin grants only what they hold and sees only their people. */

const t = withTestDatabase();
const adminA = testUser("admin", ["co-a"]);
const caller = (user: SessionUser) => createCaller(() => createTRPCContext({ user, headers: new Headers(), db: t.current.db }));

async function code(p: Promise<unknown>) {
  const err = await p.then(() => null, (e: unknown) => e);
  return err instanceof TRPCError ? err.code : "OK";
}

describe("a company-scoped admin", () => {
  it("cannot grant every company (*) or a company they do not hold; each refusal is audited", async () => {
    expect(await code(caller(adminA).users.add({ email: "star@example.com", role: "admin", companies: ["*"] }))).toBe("FORBIDDEN");
    expect(await code(caller(adminA).users.add({ email: "b@example.com", role: "viewer", companies: ["co-b"] }))).toBe("FORBIDDEN");
    expect(await code(caller(adminA).users.add({ email: "ab@example.com", role: "viewer", companies: ["co-a", "co-b"] }))).toBe("FORBIDDEN");
    expect(await t.current.db.user.count({ where: { email: { in: ["star@example.com", "b@example.com", "ab@example.com"] } } })).toBe(0);
    const refused = await t.current.db.auditEntry.findMany({ where: { action: "user.add", outcome: "refused" }, orderBy: { id: "asc" } });
    expect(refused.map((r) => (r.input as { email: string }).email)).toEqual(["star@example.com", "b@example.com", "ab@example.com"]);
    expect(refused.every((r) => r.actor === adminA.email)).toBe(true);
  });

  it("may grant the companies they hold", async () => {
    const created = await caller(adminA).users.add({ email: "a2@example.com", role: "admin", companies: ["co-a"] });
    expect(created.companies).toEqual(["co-a"]);
  });

  it("sees only people who share a company with them", async () => {
    const all = caller(testUser("admin"));
    await all.users.add({ email: "only-b@example.com", role: "viewer", companies: ["co-b"] });
    await all.users.add({ email: "a-and-b@example.com", role: "viewer", companies: ["co-a", "co-b"] });
    await all.users.add({ email: "everyone@example.com", role: "admin", companies: ["*"] });
    const seen = (await caller(adminA).users.list()).map((u) => u.email);
    expect(seen).toContain("a-and-b@example.com");
    expect(seen).toContain("a2@example.com");
    expect(seen).not.toContain("only-b@example.com");
    // An admin of every company sees everyone.
    expect((await all.users.list()).map((u) => u.email)).toContain("only-b@example.com");
  });

  it("an admin of every company may grant *", async () => {
    expect(await code(caller(testUser("admin")).users.add({ email: "star2@example.com", role: "admin", companies: ["*"] }))).toBe("OK");
  });
});
