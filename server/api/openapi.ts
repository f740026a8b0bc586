import { OpenAPIRegistry, OpenApiGeneratorV31 } from "@asteasolutions/zod-to-openapi";
import { z } from "zod";
import { APP_ERROR_TABLE } from "../errors";
import type { Meta } from "../trpc/trpc";
import { appRouter } from "../trpc/root";
import { idempotencyKeySchema } from "../runs/submit-once";
import { apiErrorSchema } from "./errors";
import { API_ROUTES } from "./routes";

/**
 * The OpenAPI 3.1 document of /api/v1 (docs/api.md), generated from the routes' own zod schemas
 * (@asteasolutions/zod-to-openapi) — served at /api/v1/openapi.json and checked in as
 * docs/openapi.json (`npm run api:openapi`; server/api/openapi.test.ts fails when it is stale).
 * Each operation says the role its procedure declares.
 */

export const API_VERSION = "1.0.0";

type ProcedureDef = { _def: { meta?: Meta } };

/** The role a tRPC procedure declares (server/trpc/trpc.ts: every procedure declares one). */
export function roleOf(procedure: string): string {
  const def = (appRouter._def.procedures as unknown as Record<string, ProcedureDef | undefined>)[procedure];
  const role = def?._def.meta?.role;
  if (!role) throw new Error(`the API names procedure ${procedure}, which declares no role (or does not exist)`);
  return role;
}

const errorResponse = (description: string) => ({ description, content: { "application/json": { schema: apiErrorSchema } } });

let built: object | null = null;

export function openApiDocument(): object {
  if (built) return built;
  const registry = new OpenAPIRegistry();
  const bearer = registry.registerComponent("securitySchemes", "apiToken", {
    type: "http",
    scheme: "bearer",
    description: "An API token (rw_…), created by an admin on the Tokens page or with `runwarden token create` (docs/api.md).",
  });
  for (const r of API_ROUTES) {
    const role = roleOf(r.procedure);
    const errors: Record<number, ReturnType<typeof errorResponse>> = {
      400: errorResponse("The input does not fit the contract (INVALID_INPUT, naming the field)."),
      401: errorResponse("No token, not a token, or a token unknown, revoked or expired (UNAUTHORIZED)."),
      403: errorResponse(`The token's role is below ${role} (FORBIDDEN).`),
      429: errorResponse("Over the token's rate limit (RATE_LIMITED); Retry-After says when to try again."),
    };
    if (r.params) errors[404] = errorResponse("No such object in the token's companies (NOT_FOUND): another company's run answers as a missing one.");
    if (r.method === "post") errors[409] = errorResponse("The object changed state, or an Idempotency-Key was used with another body (CONFLICT).");
    registry.registerPath({
      method: r.method,
      path: r.path,
      operationId: r.operationId,
      summary: r.summary,
      description: `${r.description ? `${r.description}\n\n` : ""}Needs the ${role} role.`,
      security: [{ [bearer.name]: [] }],
      "x-runwarden-role": role,
      request: {
        ...(r.params ? { params: r.params } : {}),
        ...(r.query ? { query: r.query as z.ZodObject } : {}),
        ...(r.idempotent ? { headers: z.object({ "Idempotency-Key": idempotencyKeySchema.optional() }) } : {}),
        ...(r.body ? { body: { required: true, content: { "application/json": { schema: r.body } } } } : {}),
      },
      responses: {
        ...(r.idempotent
          ? { 201: { description: "A new run.", content: { "application/json": { schema: r.response } } }, 200: { description: "The run this key already made (Idempotent-Replayed: true).", content: { "application/json": { schema: r.response } } } }
          : { 200: { description: "OK", content: { "application/json": { schema: r.response } } } }),
        ...errors,
      },
    });
  }
  const doc = new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: "3.1.0",
    info: {
      title: "Runwarden API",
      version: API_VERSION,
      description: `Submit, follow, retry and cancel agent runs; read their proofs; bulk plans and restart forecasts. Errors are one shape, with a code from: ${Object.keys(APP_ERROR_TABLE).join(", ")}.`,
    },
    servers: [{ url: "/api/v1" }],
  });
  built = doc;
  return doc;
}
