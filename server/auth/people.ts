import crypto from "node:crypto";
import { z } from "zod";
import { writeAudit, type Actor } from "../audit/write";
import type { Db } from "../db/client";
import { AppError } from "../errors";
import { text } from "../text";
import { authFor } from "./auth";
import { judgePeopleChange, type Acting, type PeopleChange, type Person } from "./people-rules";
import { ALL_COMPANIES, ROLES, type Role } from "../shared/roles";
import { generatePassword, peopleWhere } from "./users";

/**
 * Changing people (docs/access.md, "People"): role and companies, disable / enable, reset password. The
 * same functions serve tRPC and the CLI; the rules are judgePeopleChange's. Each call, refused
 * ones too, writes one audit entry (never with a password).
 */

export const peopleListOutput = z.array(
  z.object({
    id: z.string(),
    email: z.string(),
    name: z.string(),
    role: z.string(),
    companies: z.array(z.string()),
    createdAt: z.date(),
    disabledAt: z.date().nullable(),
    /** Whether this admin may change them (they hold all of the person's companies). */
    manageable: z.boolean(),
    /** The person asking. */
    self: z.boolean(),
  }),
);

/** The people an admin sees (those sharing a company with them), oldest first. */
export async function listPeople(db: Db, me: Acting): Promise<z.infer<typeof peopleListOutput>> {
  const people = await db.user.findMany({ where: peopleWhere(me.scope), orderBy: { createdAt: "asc" }, select: { id: true, email: true, name: true, role: true, companies: true, createdAt: true, disabledAt: true } });
  // Reach only (a huge starAdmins count): the last-admin rule is for the change itself.
  const reach = (p: (typeof people)[number]) => judgePeopleChange(me, { ...p, disabled: p.disabledAt !== null }, { kind: "reset_password" }, Number.MAX_SAFE_INTEGER).ok;
  return people.map((p) => ({ ...p, manageable: reach(p), self: p.id === me.userId }));
}

/** A person by id or email. */
const who = text(254);

export const updateUserInput = z.object({
  user: who,
  role: z.enum(ROLES).optional(),
  companies: z.array(text(120)).max(100).min(1, "at least one company (or * for all)").optional(),
});
export type UpdateUserInput = z.input<typeof updateUserInput>;

export const userRefInput = z.object({ user: who });
export type UserRefInput = z.input<typeof userRefInput>;

export const personOutput = z.object({
  id: z.string(),
  email: z.string(),
  role: z.enum(ROLES),
  companies: z.array(z.string()),
  disabledAt: z.date().nullable(),
});
export type PersonOut = z.infer<typeof personOutput>;

export const resetPasswordOutput = z.object({ id: z.string(), email: z.string(), password: z.string() });

export type { Acting } from "./people-rules";

const ACTIONS = { update: "user.update", disable: "user.disable", enable: "user.enable", reset_password: "user.reset_password" } as const satisfies Record<PeopleChange["kind"], string>;

/** Serialises people changes, so two admins cannot each remove "the other" last * admin. */
const PEOPLE_LOCK = 0x72770001;

const SELECT = { id: true, email: true, role: true, companies: true, disabledAt: true } as const;

function asRole(role: string): Role {
  return (ROLES as readonly string[]).includes(role) ? (role as Role) : "viewer";
}

/**
 * Judges and carries out one change under the people lock. `effect` runs inside the
 * transaction after the verdict admitted the change.
 */
async function change<T>(
  db: Db,
  actor: Actor,
  acting: Acting,
  ref: string,
  change: PeopleChange,
  audited: Record<string, unknown>,
  effect: (tx: Parameters<Parameters<Db["$transaction"]>[0]>[0], target: PersonOut) => Promise<T>,
): Promise<T> {
  const action = ACTIONS[change.kind];
  const outcome = await db.$transaction(async (tx) => {
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(${PEOPLE_LOCK}::int)`;
    const row = await tx.user.findFirst({ where: { OR: [{ id: ref }, { email: ref.toLowerCase() }] }, select: SELECT });
    const target: Person | null = row ? { id: row.id, role: row.role, companies: row.companies, disabled: row.disabledAt !== null } : null;
    const starAdmins = await tx.user.count({ where: { role: "admin", companies: { has: ALL_COMPANIES }, disabledAt: null } });
    const verdict = judgePeopleChange(acting, target, change, starAdmins);
    if (!verdict.ok) return { done: false, refused: verdict } as const;
    const out: PersonOut = { ...row!, role: asRole(row!.role) };
    const value = await effect(tx, out);
    await writeAudit(tx, actor, { action, targetType: "user", targetId: row!.id, input: audited, outcome: "ok" });
    return { done: true, value } as const;
  });
  if (!outcome.done) {
    const { code, reason } = outcome.refused;
    // A person the admin cannot see is audited under the name they gave, not resolved.
    await writeAudit(db, actor, { action, targetType: "user", targetId: ref, input: audited, outcome: "refused", detail: { reason } });
    throw new AppError(code, code === "NOT_FOUND" ? `no person ${ref}` : `${action} of ${ref} refused: ${reason}`);
  }
  return outcome.value;
}

/** Changes a person's role and/or companies. */
export async function updateUser(db: Db, raw: UpdateUserInput, actor: Actor, acting: Acting): Promise<PersonOut> {
  const input = updateUserInput.parse(raw);
  const companies = input.companies ? [...new Set(input.companies)] : undefined;
  return change(db, actor, acting, input.user, { kind: "update", role: input.role, companies }, { user: input.user, role: input.role, companies }, async (tx, target) => {
    const row = await tx.user.update({ where: { id: target.id }, data: { ...(input.role ? { role: input.role } : {}), ...(companies ? { companies } : {}) }, select: SELECT });
    return { ...row, role: asRole(row.role) };
  });
}

/** Disables a person: they cannot sign in, and every session of theirs ends now. */
export async function disableUser(db: Db, raw: UserRefInput, actor: Actor, acting: Acting, now: Date = new Date()): Promise<PersonOut> {
  const input = userRefInput.parse(raw);
  return change(db, actor, acting, input.user, { kind: "disable" }, { user: input.user }, async (tx, target) => {
    const row = await tx.user.update({ where: { id: target.id }, data: { disabledAt: target.disabledAt ?? now }, select: SELECT });
    await tx.session.deleteMany({ where: { userId: target.id } });
    return { ...row, role: asRole(row.role) };
  });
}

/** Lets a disabled person sign in again (their old sessions stay ended). */
export async function enableUser(db: Db, raw: UserRefInput, actor: Actor, acting: Acting): Promise<PersonOut> {
  const input = userRefInput.parse(raw);
  return change(db, actor, acting, input.user, { kind: "enable" }, { user: input.user }, async (tx, target) => {
    const row = await tx.user.update({ where: { id: target.id }, data: { disabledAt: null }, select: SELECT });
    return { ...row, role: asRole(row.role) };
  });
}

/**
 * Sets a new generated password and returns it, once; only its hash is stored. The person's
 * sessions end (a reset is how a leaked password is shut out) — except an admin's own.
 */
export async function resetPassword(db: Db, raw: UserRefInput, actor: Actor, acting: Acting): Promise<{ id: string; email: string; password: string }> {
  const input = userRefInput.parse(raw);
  const password = generatePassword();
  const ctx = await authFor(db).$context;
  const hash = await ctx.password.hash(password);
  return change(db, actor, acting, input.user, { kind: "reset_password" }, { user: input.user }, async (tx, target) => {
    const updated = await tx.account.updateMany({ where: { userId: target.id, providerId: "credential" }, data: { password: hash } });
    if (updated.count === 0) {
      await tx.account.create({ data: { id: crypto.randomUUID(), userId: target.id, providerId: "credential", accountId: target.id, password: hash } });
    }
    if (target.id !== acting.userId) await tx.session.deleteMany({ where: { userId: target.id } });
    return { id: target.id, email: target.email, password };
  });
}
