import type { Db } from "../db/client";
import { AppError } from "../errors";
import { scopeOf, type SessionUser } from "../shared/roles";
import { hashToken, isTokenShaped } from "./format";
import { TOKEN_ROLES, type TokenRole } from "./schemas";

/** Who a token's request acts as: the audit names it `token:<name>` (docs/api.md). */
export interface TokenPrincipal {
  tokenId: string;
  name: string;
  prefix: string;
  user: SessionUser;
}

/**
 * The principal behind `Authorization: Bearer rw_…`, or an UNAUTHORIZED AppError that says
 * what is wrong (missing, not a token, unknown, revoked, expired) — never which part of a
 * wrong secret was right. Only this header is read: a session cookie does not authorise the
 * API (no CSRF path). The token's last use (time and address) is recorded.
 */
export async function authenticateToken(db: Db, instanceId: string, authorization: string | null, address: string | null): Promise<TokenPrincipal> {
  if (!authorization) throw new AppError("UNAUTHORIZED", "no API token: send Authorization: Bearer rw_… (a dashboard session does not sign in to the API)");
  const m = /^Bearer\s+(\S+)$/i.exec(authorization.trim());
  if (!m || !isTokenShaped(m[1]!)) throw new AppError("UNAUTHORIZED", "Authorization is not Bearer and an API token (rw_ and 43 characters)");
  const rows = await db.$queryRaw<{ id: string; name: string; prefix: string; role: string; companies: string[]; expired: boolean; revoked: boolean }[]>`
    UPDATE api_tokens SET last_used_at = now(), last_used_ip = ${address}
    WHERE secret_hash = ${hashToken(m[1]!)} AND instance_id = ${instanceId} AND revoked_at IS NULL AND expires_at > now()
    RETURNING id, name, prefix, role, companies, false AS expired, false AS revoked`;
  const row = rows[0];
  if (!row) {
    const known = await db.apiToken.findFirst({ where: { secretHash: hashToken(m[1]!), instanceId }, select: { revokedAt: true, expiresAt: true, prefix: true } });
    if (known?.revokedAt) throw new AppError("UNAUTHORIZED", `token ${known.prefix}… was revoked`);
    if (known) throw new AppError("UNAUTHORIZED", `token ${known.prefix}… expired at ${known.expiresAt.toISOString()}`);
    throw new AppError("UNAUTHORIZED", "unknown API token");
  }
  const role: TokenRole = (TOKEN_ROLES as readonly string[]).includes(row.role) ? (row.role as TokenRole) : "viewer";
  return { tokenId: row.id, name: row.name, prefix: row.prefix, user: { id: row.id, email: `token:${row.name}`, role, scope: scopeOf(row.companies) } };
}
