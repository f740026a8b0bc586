import { z } from "zod";
import { text } from "../text";

/** The roles a token may hold (docs/api.md): never admin — people are managed by people. */
export const TOKEN_ROLES = ["viewer", "board", "operator"] as const;
export type TokenRole = (typeof TOKEN_ROLES)[number];

export const createTokenInput = z.object({
  name: text(80).pipe(z.string().regex(/^[A-Za-z0-9][A-Za-z0-9 ._:-]*$/, "letters, digits, spaces, '.', '_', ':' or '-'")),
  role: z.enum(TOKEN_ROLES, { message: "a token's role is viewer, board or operator (never admin)" }),
  companies: z.array(text(120)).min(1, "at least one company (or * for all)").max(100),
  /** Its lifetime: `30d`, `12h`, `90m` (required: every token expires). */
  expiresIn: z.string().min(1, "every token expires: give a lifetime such as 30d"),
});
export type CreateTokenInput = z.input<typeof createTokenInput>;

export const tokenIdInput = z.object({ id: z.uuid() });

/** A token as a list shows it: never its secret. */
export const tokenSummarySchema = z.object({
  id: z.string(),
  name: z.string(),
  prefix: z.string(),
  role: z.enum(TOKEN_ROLES),
  companies: z.array(z.string()),
  createdBy: z.string(),
  createdAt: z.date(),
  expiresAt: z.date(),
  lastUsedAt: z.date().nullable(),
  lastUsedIp: z.string().nullable(),
  revokedAt: z.date().nullable(),
  revokedBy: z.string().nullable(),
  state: z.enum(["active", "expired", "revoked"]),
});
export type TokenSummary = z.infer<typeof tokenSummarySchema>;

/** What creating a token answers: the summary and the token itself, this once. */
export const createdTokenSchema = z.object({ token: z.string(), summary: tokenSummarySchema });
