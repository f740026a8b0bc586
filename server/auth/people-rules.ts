import { ALL_COMPANIES, inScope, type CompanyScope, type Role } from "../shared/roles";

/**
 * Who may change whom, within the admin's company scope (docs/access.md, "People"). Pure: the service
 * (server/auth/people.ts) gathers the facts under a lock and carries out the answer.
 */

export type PeopleChange =
  | { kind: "update"; role?: Role; companies?: string[] }
  | { kind: "disable" }
  | { kind: "enable" }
  | { kind: "reset_password" };

export interface Acting {
  /** The acting person's user id; null for the machine's CLI operator, who is nobody's account. */
  userId: string | null;
  scope: CompanyScope;
}

export interface Person {
  id: string;
  role: string;
  companies: string[];
  disabled: boolean;
}

export type PeopleVerdict = { ok: true } | { ok: false; code: "NOT_FOUND" | "FORBIDDEN" | "CONFLICT"; reason: string };

/** An enabled admin of every company: the person who can always repair access. */
export function isStarAdmin(p: { role: string; companies: readonly string[]; disabled: boolean }): boolean {
  return p.role === "admin" && p.companies.includes(ALL_COMPANIES) && !p.disabled;
}

/** The person as they would be after the change. */
export function applyChange(p: Person, change: PeopleChange): Person {
  switch (change.kind) {
    case "update":
      return { ...p, role: change.role ?? p.role, companies: change.companies ?? p.companies };
    case "disable":
      return { ...p, disabled: true };
    case "enable":
      return { ...p, disabled: false };
    case "reset_password":
      return p;
  }
}

/**
 * `target` null: no such person. `starAdmins`: enabled admins of every company now (the
 * target included when they are one).
 *
 * - An admin sees only people who share a company with them; anyone else reads as absent.
 * - They act only on people all of whose companies they hold (`*` only an admin of every
 *   company), so nobody changes access to a company they do not administer.
 * - They grant only companies they hold.
 * - Nobody disables themselves, and no change leaves no enabled admin of every company.
 */
export function judgePeopleChange(acting: Acting, target: Person | null, change: PeopleChange, starAdmins: number): PeopleVerdict {
  const scope = acting.scope;
  const visible = target !== null && (scope.all || target.companies.includes(ALL_COMPANIES) || target.companies.some((c) => inScope(scope, c)));
  if (!target || !visible) return { ok: false, code: "NOT_FOUND", reason: "no such person" };
  const outside = scope.all ? [] : target.companies.filter((c) => c === ALL_COMPANIES || !inScope(scope, c));
  if (outside.length > 0) {
    return { ok: false, code: "FORBIDDEN", reason: `they also hold ${outside.join(", ")}, which you do not administer` };
  }
  if (change.kind === "update") {
    if (change.role === undefined && change.companies === undefined) return { ok: false, code: "CONFLICT", reason: "nothing to change: give a role or companies" };
    const denied = scope.all ? [] : (change.companies ?? []).filter((c) => c === ALL_COMPANIES || !inScope(scope, c));
    if (denied.length > 0) {
      const why = denied.includes(ALL_COMPANIES) ? "only an admin of every company may grant *" : `you do not hold ${denied.join(", ")}`;
      return { ok: false, code: "FORBIDDEN", reason: `cannot grant ${denied.join(", ")}: ${why}` };
    }
  }
  if (change.kind === "disable" && acting.userId !== null && acting.userId === target.id) {
    return { ok: false, code: "FORBIDDEN", reason: "you cannot disable yourself" };
  }
  const after = applyChange(target, change);
  if (isStarAdmin(target) && !isStarAdmin(after) && starAdmins <= 1) {
    return { ok: false, code: "CONFLICT", reason: "they are the last enabled admin of every company (*); make someone else one first" };
  }
  return { ok: true };
}
