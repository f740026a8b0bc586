import type { ApiToken } from "../db/client";
import { TOKEN_ROLES, type TokenSummary } from "./schemas";

export function tokenSummary(t: ApiToken, now: Date): TokenSummary {
  const role = (TOKEN_ROLES as readonly string[]).includes(t.role) ? (t.role as TokenSummary["role"]) : "viewer";
  return {
    id: t.id,
    name: t.name,
    prefix: t.prefix,
    role,
    companies: t.companies,
    createdBy: t.createdBy,
    createdAt: t.createdAt,
    expiresAt: t.expiresAt,
    lastUsedAt: t.lastUsedAt,
    lastUsedIp: t.lastUsedIp,
    revokedAt: t.revokedAt,
    revokedBy: t.revokedBy,
    state: t.revokedAt ? "revoked" : t.expiresAt <= now ? "expired" : "active",
  };
}
