import { Prisma } from "../db/client";
import type { CompanyScope } from "../shared/roles";

/**
 * Pieces of the list statements (runs.list, intents.list) built with `Prisma.sql`: every
 * value a bound parameter, never text spliced into the SQL.
 */

/** `a AND b AND …`, or `true` with no condition. */
export function allOf(conditions: Prisma.Sql[]): Prisma.Sql {
  return conditions.length ? Prisma.join(conditions, " AND ") : Prisma.sql`true`;
}

/** The viewer's companies as a condition on `company_id` (none of them: nothing). */
export function scopeSql(scope: CompanyScope): Prisma.Sql[] {
  if (scope.all) return [];
  return [scope.companies.length ? Prisma.sql`company_id IN (${Prisma.join(scope.companies)})` : Prisma.sql`false`];
}

/** `%` and `_` in a search are the characters themselves, not LIKE's wildcards. */
export function likeContains(s: string): string {
  return `%${s.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

