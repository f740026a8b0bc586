import { z } from "zod";
import { bulkPlanSchema } from "../runs/bulk-plan";
import { BULK_PLAN_KINDS } from "../shared/bulk";
import { runEvidenceOutput, proofViewSchema } from "../runs/detail";
import { runFilterShape, runListOutput } from "../runs/queries";
import { runSummarySchema, submitRunInput } from "../runs/submit";
import { cancelOutcomeSchema } from "../services";
import { forecastDetailSchema } from "../forecasts/read";
import { forecastCountsSchema } from "../shared/forecast";
import type { createCaller } from "../trpc/root";
import { uuidSchema } from "../lib/ids";
import { apiRunOf, apiRunSchema } from "./run-view";

/**
 * The HTTP API's routes (docs/api.md): each one a tRPC procedure called server-side with the
 * token's principal, so the rule, the role check, the audit and the error table are the
 * dashboard's own — one rule, two doors. A route names its procedure (its role is read from the
 * procedure: server/api/openapi.ts), its inputs as zod schemas (path, query, JSON body) and its
 * answer's schema; the OpenAPI document is generated from this table and nothing else.
 */

export type Caller = ReturnType<typeof createCaller>;

export interface ApiRoute {
  method: "get" | "post";
  /** OpenAPI style, under /api/v1: `/runs/{id}`. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  /** The tRPC procedure it calls (its declared role is the route's). */
  procedure: string;
  params?: z.ZodObject;
  query?: z.ZodType;
  body?: z.ZodType;
  response: z.ZodType;
  /** The status of a success (201 for a new run). */
  status: (result: unknown) => number;
  /** Whether the Idempotency-Key header is read. */
  idempotent?: boolean;
  /** Called with the inputs as the route's schemas parsed them (server/api/handle.ts). */
  call: (caller: Caller, input: { params: unknown; query: unknown; body: unknown }) => Promise<unknown>;
}

const ok = () => 200;
const runIdParams = z.object({ id: uuidSchema });

/** The list's filters as a query string carries them: dates as ISO text, the page size as a number in text. */
const dateText = z.coerce.date();
const restFilterShape = { ...runFilterShape, createdFrom: dateText.optional(), createdTo: dateText.optional() };
const listRunsQuery = z.object({ ...restFilterShape, cursor: z.string().max(400).optional(), pageSize: z.coerce.number().int().min(5).max(100).default(25) });
const submitResponse = runSummarySchema.extend({ replayed: z.boolean() });
const retryResponse = z.object({ run: runSummarySchema, created: z.boolean(), cleanup: z.array(z.object({ leaseId: z.string(), outcome: z.string() })) });
const cancelBody = z.object({ reason: z.string().max(500).optional() });
const bulkPreviewBody = z.object({ kind: z.enum(BULK_PLAN_KINDS), filter: z.object(restFilterShape), reason: z.string().max(500).optional() });
const bulkConfirmBody = z.object({ confirm: z.string().max(80) });
const bulkConfirmResponse = bulkPlanSchema.extend({ cleanup: z.array(z.object({ leaseId: z.string(), outcome: z.string() })) });
const forecastTakeResponse = z.object({ id: z.string(), counts: forecastCountsSchema, durationMs: z.number().int() });

// The route's own schemas parsed its inputs before `call` runs (server/api/handle.ts).
function route<P extends z.ZodObject | undefined, Q extends z.ZodType | undefined, B extends z.ZodType | undefined>(
  def: Omit<ApiRoute, "call" | "params" | "query" | "body" | "status"> & {
    params?: P;
    query?: Q;
    body?: B;
    status?: (result: unknown) => number;
    call: (
      caller: Caller,
      input: { params: P extends z.ZodObject ? z.infer<P> : Record<string, never>; query: Q extends z.ZodType ? z.infer<Q> : undefined; body: B extends z.ZodType ? z.infer<B> : undefined },
    ) => Promise<unknown>;
  },
): ApiRoute {
  return { ...def, status: def.status ?? ok, call: def.call as unknown as ApiRoute["call"] } as ApiRoute;
}

export const API_ROUTES: ApiRoute[] = [
  route({
    method: "post",
    path: "/runs",
    operationId: "submitRun",
    summary: "Submit a run",
    description:
      "Queues a run for a task; a controller claims and executes it. With an Idempotency-Key header (or, without one, the body's externalId) the same key and body answer the same run again (200, Idempotent-Replayed: true); the same key with another body is a 409.",
    procedure: "runs.create",
    body: submitRunInput,
    response: submitResponse,
    idempotent: true,
    status: (r) => ((r as { replayed: boolean }).replayed ? 200 : 201),
    call: (c, { body }) => c.runs.create(body),
  }),
  route({
    method: "get",
    path: "/runs",
    operationId: "listRuns",
    summary: "List runs",
    description: "Newest first, filtered, one page at a time: pass the answer's nextCursor as cursor for the next page (keyset paging: a run is never on two pages).",
    procedure: "runs.list",
    query: listRunsQuery,
    response: runListOutput,
    call: (c, { query }) => c.runs.list(query),
  }),
  route({
    method: "get",
    path: "/runs/{id}",
    operationId: "getRun",
    summary: "Get a run",
    description: "Its status, failure code, owner, whether Retry is offered (or why not), the plain reason, and the run that carries the task now.",
    procedure: "runs.get",
    params: runIdParams,
    response: apiRunSchema,
    call: async (c, { params }) => apiRunOf(await c.runs.get({ id: params.id })),
  }),
  route({
    method: "get",
    path: "/runs/{id}/proofs",
    operationId: "listRunProofs",
    summary: "A run's proofs",
    description: "Every decision taken on the run, with its checks (expected and observed), oldest first (docs/evidence.md).",
    procedure: "runs.get",
    params: runIdParams,
    response: z.object({ proofs: z.array(proofViewSchema) }),
    call: async (c, { params }) => ({ proofs: (await c.runs.get({ id: params.id })).proofs }),
  }),
  route({
    method: "get",
    path: "/runs/{id}/evidence",
    operationId: "getRunEvidence",
    summary: "A run's evidence bundles",
    description: "The evidence bundle of each proof, as `runwarden decide` accepts it.",
    procedure: "runs.evidence",
    params: runIdParams,
    response: runEvidenceOutput,
    call: (c, { params }) => c.runs.evidence({ id: params.id }),
  }),
  route({
    method: "post",
    path: "/runs/{id}/retry",
    operationId: "retryRun",
    summary: "Retry a run",
    description: "Exactly one successor however often it is called (created: false on a repeat); refused with the reason when Retry is not offered.",
    procedure: "runs.retry",
    params: runIdParams,
    response: retryResponse,
    call: (c, { params }) => c.runs.retry({ runId: params.id }),
  }),
  route({
    method: "post",
    path: "/runs/{id}/cancel",
    operationId: "cancelRun",
    summary: "Cancel a run",
    description: "Takes the run over, stops its runner, tears its sandbox down and rests it in cancelled; an ended run answers refused with the reason.",
    procedure: "runs.cancel",
    params: runIdParams,
    body: cancelBody,
    response: cancelOutcomeSchema,
    call: (c, { params, body }) => c.runs.cancel({ runId: params.id, ...(body.reason !== undefined ? { reason: body.reason } : {}) }),
  }),
  route({
    method: "post",
    path: "/bulk",
    operationId: "previewBulkPlan",
    summary: "Preview a bulk Retry or Cancel",
    description: "Judges each run the filter names (at most 1,000) as Retry or Cancel would and stores the plan with its confirm word; changes no run.",
    procedure: "plans.preview",
    body: bulkPreviewBody,
    response: bulkPlanSchema,
    call: (c, { body }) => c.plans.preview(body),
  }),
  route({
    method: "get",
    path: "/bulk/{planId}",
    operationId: "getBulkPlan",
    summary: "A bulk plan",
    procedure: "plans.get",
    params: z.object({ planId: uuidSchema }),
    response: bulkPlanSchema,
    call: (c, { params }) => c.plans.get({ planId: params.planId }),
  }),
  route({
    method: "post",
    path: "/bulk/{planId}/confirm",
    operationId: "confirmBulkPlan",
    summary: "Confirm a bulk plan",
    description: "Carries out the runs the preview admitted, each judged again now; the same per-run results however often it is called.",
    procedure: "plans.confirm",
    params: z.object({ planId: uuidSchema }),
    body: bulkConfirmBody,
    response: bulkConfirmResponse,
    call: (c, { params, body }) => c.plans.confirm({ planId: params.planId, confirm: body.confirm }),
  }),
  route({
    method: "post",
    path: "/forecasts",
    operationId: "takeForecast",
    summary: "Take a restart forecast",
    description: "What a restart would do to each live run of the token's companies (docs/recovery.md); read-only on every run, stored.",
    procedure: "forecasts.take",
    response: forecastTakeResponse,
    call: (c) => c.forecasts.take({}),
  }),
  route({
    method: "get",
    path: "/forecasts/{id}",
    operationId: "getForecast",
    summary: "A stored forecast with its runs",
    procedure: "forecasts.get",
    params: z.object({ id: uuidSchema }),
    response: forecastDetailSchema,
    call: (c, { params }) => c.forecasts.get({ id: params.id }),
  }),
];
