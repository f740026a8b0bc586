import { writeAudit, type Actor } from "../audit/write";
import { ungrantable } from "../auth/users";
import { databaseNow } from "../db/clock";
import { Prisma, type Db } from "../db/client";
import { env } from "../env";
import { AppError } from "../errors";
import type { CompanyScope } from "../shared/roles";
import { mintToken, parseLifetime } from "./format";
import { createTokenInput, type CreateTokenInput } from "./schemas";
import { tokenSummary } from "./summary";

/**
 * An API token (docs/api.md): made by an admin, for companies the admin holds, with a role below
 * admin and an expiry no later than RUNWARDEN_API_TOKEN_MAX_DAYS. The token is returned this once;
 * only its SHA-256 is stored, and the audit entry names it by its prefix.
 */
export async function createApiToken(db: Db, instanceId: string, actor: Actor, scope: CompanyScope, raw: CreateTokenInput, options: { maxDays?: number } = {}) {
  const input = createTokenInput.parse(raw);
  const audited = { name: input.name, role: input.role, companies: input.companies, expiresIn: input.expiresIn };
  const refuse = async (code: "INVALID_INPUT" | "FORBIDDEN" | "CONFLICT", message: string) => {
    await writeAudit(db, actor, { action: "token.create", targetType: "token", targetId: input.name, input: audited, outcome: "refused", detail: { reason: message } });
    return new AppError(code, message);
  };
  const lifetime = parseLifetime(input.expiresIn);
  if (!lifetime.ok) throw await refuse("INVALID_INPUT", `expiresIn: ${lifetime.error}`);
  const maxDays = options.maxDays ?? env.RUNWARDEN_API_TOKEN_MAX_DAYS;
  if (lifetime.ms > maxDays * 86_400_000) throw await refuse("INVALID_INPUT", `expiresIn: ${input.expiresIn} is longer than the most a token may last, ${maxDays} days (RUNWARDEN_API_TOKEN_MAX_DAYS)`);
  const outside = ungrantable(scope, input.companies);
  if (outside.length) throw await refuse("FORBIDDEN", `you cannot grant a token ${outside.map((c) => (c === "*" ? "every company (*)" : `company ${c}`)).join(", ")}: a token's companies are a subset of yours`);
  const now = await databaseNow(db);
  const minted = mintToken();
  try {
    const row = await db.$transaction(async (tx) => {
      const created = await tx.apiToken.create({
        data: { instanceId, name: input.name, prefix: minted.prefix, secretHash: minted.secretHash, role: input.role, companies: [...new Set(input.companies)], createdBy: actor.id, expiresAt: new Date(now.getTime() + lifetime.ms) },
      });
      await writeAudit(tx, actor, { action: "token.create", targetType: "token", targetId: created.id, input: { ...audited, prefix: minted.prefix }, outcome: "ok" });
      return created;
    });
    return { token: minted.token, summary: tokenSummary(row, now) };
  } catch (err) {
    if (err instanceof Prisma.PrismaClientKnownRequestError && err.code === "P2002") throw await refuse("CONFLICT", `a token named ${input.name} already exists: revoke it or choose another name`);
    throw err;
  }
}
