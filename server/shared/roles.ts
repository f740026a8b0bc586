/**
 * Who may do what (docs/access.md). Each role includes the one before it:
 *   viewer   — support: read everything of their companies, audit waves
 *   board    — viewer, plus Retry and Cancel on their companies' runs
 *   operator — board, plus sweeps, reclaim, wave imports, submitting runs
 *   admin    — operator, plus managing users
 */
export const ROLES = ["viewer", "board", "operator", "admin"] as const;
export type Role = (typeof ROLES)[number];

const RANK: Record<Role, number> = { viewer: 0, board: 1, operator: 2, admin: 3 };

export function isRole(value: unknown): value is Role {
  return typeof value === "string" && (ROLES as readonly string[]).includes(value);
}

export function roleAllows(has: Role, needs: Role): boolean {
  return RANK[has] >= RANK[needs];
}

/** The companies a person sees and acts on; "*" in their list means every company. */
export type CompanyScope = { all: true } | { all: false; companies: string[] };

export const ALL_COMPANIES = "*";

export function scopeOf(companies: readonly string[]): CompanyScope {
  return companies.includes(ALL_COMPANIES) ? { all: true } : { all: false, companies: [...companies] };
}

export function inScope(scope: CompanyScope, companyId: string | null | undefined): boolean {
  return scope.all || (companyId != null && scope.companies.includes(companyId));
}

/** A Prisma `where` fragment limiting rows with a `companyId` column to the scope. */
export function companyWhere(scope: CompanyScope): { companyId?: { in: string[] } } {
  return scope.all ? {} : { companyId: { in: scope.companies } };
}

export interface SessionUser {
  id: string;
  email: string;
  role: Role;
  scope: CompanyScope;
}
