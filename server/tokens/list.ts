import { databaseNow } from "../db/clock";
import type { Db } from "../db/client";
import { ALL_COMPANIES, type CompanyScope } from "../shared/roles";
import type { TokenSummary } from "./schemas";
import { tokenSummary } from "./summary";

/**
 * The tokens an admin with `scope` sees (docs/api.md): those whose every company they hold — an
 * all-company admin sees them all. Newest first; revoked and expired ones stay listed, marked.
 */
export async function listApiTokens(db: Db, instanceId: string, scope: CompanyScope): Promise<TokenSummary[]> {
  const now = await databaseNow(db);
  const rows = await db.apiToken.findMany({ where: { instanceId }, orderBy: { createdAt: "desc" } });
  return rows.filter((t) => scope.all || t.companies.every((c) => c !== ALL_COMPANIES && scope.companies.includes(c))).map((t) => tokenSummary(t, now));
}
