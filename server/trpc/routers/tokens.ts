import { z } from "zod";
import { createApiToken } from "../../tokens/create";
import { listApiTokens } from "../../tokens/list";
import { revokeApiToken } from "../../tokens/revoke";
import { createdTokenSchema, createTokenInput, tokenIdInput, tokenSummarySchema } from "../../tokens/schemas";
import { adminProcedure, createTRPCRouter } from "../trpc";

/**
 * API tokens (docs/access.md, "API tokens"): admin-only, each a thin call to server/tokens.
 * `create` answers the token itself, this once; the audit holds only what the service writes
 * (name, role, companies, lifetime, prefix) — the answer of a mutation is never audited, and
 * its input holds no secret.
 */
export const tokensRouter = createTRPCRouter({
  list: adminProcedure.output(z.array(tokenSummarySchema)).query(async ({ ctx }) => listApiTokens(ctx.db, await ctx.instanceId(), ctx.scope)),
  create: adminProcedure
    .input(createTokenInput)
    .output(createdTokenSchema)
    .mutation(async ({ ctx, input }) => createApiToken(ctx.db, await ctx.instanceId(), ctx.actor, ctx.scope, input)),
  revoke: adminProcedure
    .input(tokenIdInput)
    .output(z.object({ summary: tokenSummarySchema, changed: z.boolean() }))
    .mutation(async ({ ctx, input }) => revokeApiToken(ctx.db, await ctx.instanceId(), ctx.actor, ctx.scope, { id: input.id })),
});
