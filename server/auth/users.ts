import crypto from "node:crypto";
import { z } from "zod";
import { writeAudit, type Actor } from "../audit/write";
import type { Db } from "../db/client";
import { AppError } from "../errors";
import { text } from "../text";
import { authFor } from "./auth";
import { ALL_COMPANIES, inScope, isRole, ROLES, scopeOf, type CompanyScope, type Role, type SessionUser } from "../shared/roles";

export const addUserInput = z.object({
  email: text(254).pipe(z.email()).transform((e) => e.toLowerCase()),
  name: text(120).optional(),
  role: z.enum(ROLES),
  companies: z.array(text(120)).max(100).min(1, "at least one company (or * for all)"),
  password: z.string().min(10, "at least 10 characters").max(200).optional(),
});
export type AddUserInput = z.input<typeof addUserInput>;

/** A password for someone who gets it once, on the screen that created their account. */
export function generatePassword(): string {
  return crypto.randomBytes(15).toString("base64url");
}

/**
 * The companies of `companies` an admin with `scope` may not grant: `*` only an admin of
 * every company may grant, any other company only an admin who holds it (docs/access.md, "People": company scope).
 */
export function ungrantable(scope: CompanyScope, companies: readonly string[]): string[] {
  if (scope.all) return [];
  return companies.filter((c) => c === ALL_COMPANIES || !inScope(scope, c));
}

/** Whether an admin with `scope` may see (and manage) a person holding `companies`: they share one. */
export function sharesCompany(scope: CompanyScope, companies: readonly string[]): boolean {
  return scope.all || companies.includes(ALL_COMPANIES) || companies.some((c) => inScope(scope, c));
}

/** The Prisma `where` for the people an admin with `scope` sees. */
export function peopleWhere(scope: CompanyScope): { companies?: { hasSome: string[] } } {
  return scope.all ? {} : { companies: { hasSome: [...scope.companies, ALL_COMPANIES] } };
}

/**
 * Adds a person who can sign in (there is no self sign-up). Returns the password when it
 * was generated here, so the caller can show it exactly once. `scope` is the acting
 * admin's: they grant only companies they hold themselves.
 */
export async function addUser(db: Db, raw: AddUserInput, actor: Actor, scope: CompanyScope): Promise<{ id: string; email: string; role: Role; companies: string[]; generatedPassword: string | null }> {
  const input = addUserInput.parse(raw);
  const denied = ungrantable(scope, input.companies);
  if (denied.length > 0) {
    const reason = denied.includes(ALL_COMPANIES) ? "only an admin of every company may grant *" : `you do not hold ${denied.join(", ")}`;
    await writeAudit(db, actor, { action: "user.add", targetType: "user", targetId: input.email, input: { email: input.email, role: input.role, companies: input.companies }, outcome: "refused", detail: { reason } });
    throw new AppError("FORBIDDEN", `cannot grant ${denied.join(", ")}: ${reason}`);
  }
  if (await db.user.findUnique({ where: { email: input.email }, select: { id: true } })) {
    throw new AppError("CONFLICT", `a user with email ${input.email} already exists`);
  }
  const password = input.password ?? generatePassword();
  const ctx = await authFor(db).$context;
  const user = await ctx.internalAdapter.createUser(
    { email: input.email, name: input.name ?? input.email.split("@")[0]!, emailVerified: true, role: input.role, companies: input.companies },
    { method: "admin" },
  );
  await ctx.internalAdapter.linkAccount({ userId: user.id, providerId: "credential", accountId: user.id, password: await ctx.password.hash(password) });
  // The input is audited without the password.
  await writeAudit(db, actor, { action: "user.add", targetType: "user", targetId: user.id, input: { email: input.email, role: input.role, companies: input.companies }, outcome: "ok" });
  return { id: user.id, email: input.email, role: input.role, companies: input.companies, generatedPassword: input.password ? null : password };
}

/** The signed-in person behind a request, or null. */
export async function sessionUser(db: Db, headers: Headers): Promise<SessionUser | null> {
  const session = await authFor(db).api.getSession({ headers });
  if (!session) return null;
  const u = session.user as { id: string; email: string; role?: unknown; companies?: unknown; disabledAt?: unknown };
  // Disabling deletes the sessions; this also shuts out one created in the same instant.
  if (u.disabledAt != null) return null;
  const role: Role = isRole(u.role) ? u.role : "viewer";
  const companies = Array.isArray(u.companies) ? u.companies.filter((c): c is string => typeof c === "string") : [];
  return { id: u.id, email: u.email, role, scope: scopeOf(companies) };
}

/** On an empty user table, the first operator (an admin of every company), with a password shown once. */
export async function ensureFirstOperator(db: Db): Promise<{ email: string; password: string } | null> {
  if ((await db.user.count()) > 0) return null;
  const email = "operator@runwarden.local";
  const created = await addUser(db, { email, name: "First operator", role: "admin", companies: [ALL_COMPANIES] }, { id: "system:first-boot", role: "admin" }, { all: true });
  return { email, password: created.generatedPassword! };
}
