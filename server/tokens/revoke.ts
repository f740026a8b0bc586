import { writeAudit, type Actor } from "../audit/write";
import { databaseNow } from "../db/clock";
import type { Db } from "../db/client";
import { AppError } from "../errors";
import { ALL_COMPANIES, type CompanyScope } from "../shared/roles";
import type { TokenSummary } from "./schemas";
import { tokenSummary } from "./summary";

/**
 * Revokes a token by id or by name (docs/api.md): its next request is refused (every request
 * reads the token's row). Revoking a revoked token changes nothing and says so; an admin revokes
 * only tokens whose every company they hold, and one they cannot see is not found.
 */
export async function revokeApiToken(db: Db, instanceId: string, actor: Actor, scope: CompanyScope, ref: { id?: string; name?: string }): Promise<{ summary: TokenSummary; changed: boolean }> {
  const row = await db.apiToken.findFirst({ where: { instanceId, ...(ref.id ? { id: ref.id } : { name: ref.name ?? "" }) } });
  const visible = row && (scope.all || row.companies.every((c) => c !== ALL_COMPANIES && scope.companies.includes(c)));
  const target = ref.id ?? ref.name ?? "";
  if (!row || !visible) {
    await writeAudit(db, actor, { action: "token.revoke", targetType: "token", targetId: target, outcome: "refused", detail: { reason: "not found" } });
    throw new AppError("NOT_FOUND", `no token ${target}`);
  }
  if (row.revokedAt) return { summary: tokenSummary(row, await databaseNow(db)), changed: false };
  return db.$transaction(async (tx) => {
    const [revoked] = await tx.$queryRaw<{ id: string }[]>`UPDATE api_tokens SET revoked_at = now(), revoked_by = ${actor.id} WHERE id = ${row.id}::uuid AND revoked_at IS NULL RETURNING id`;
    const after = await tx.apiToken.findUniqueOrThrow({ where: { id: row.id } });
    if (revoked) await writeAudit(tx, actor, { action: "token.revoke", targetType: "token", targetId: row.id, input: { name: row.name, prefix: row.prefix }, outcome: "ok" });
    return { summary: tokenSummary(after, await databaseNow(tx)), changed: Boolean(revoked) };
  });
}
