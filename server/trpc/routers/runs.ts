import { z } from "zod";
import { getRunDetail, runDetailOutput, runEvidence, runEvidenceOutput, runIdInput } from "../../runs/detail";
import { countRuns, failureGroups, failureGroupsOutput, listRuns, runFacets, runFacetsOutput, runCountOutput, runFilterInput, runListInput, runListOutput, runStatusCounts, runStatusCountsOutput } from "../../runs/queries";
import { retryRun } from "../../runs/retry";
import { listStuck, stuckListInput, stuckListOutput } from "../../runs/stuck";
import { pickRunSummary, runSummarySchema, submitRunInput } from "../../runs/submit";
import { submitRunOnce } from "../../runs/submit-once";
import { boardProcedure, createTRPCRouter, operatorProcedure, viewerProcedure } from "../trpc";
import { uuidSchema } from "../../lib/ids";
import { CANCEL_REASON_MAX, cancelOutcomeSchema } from "../../services";

export const cancelRunInput = z.object({ runId: uuidSchema, reason: z.string().max(CANCEL_REASON_MAX).optional() });
export const cancelRunOutput = cancelOutcomeSchema;

export const runsRouter = createTRPCRouter({
  /** How many runs are in each status. */
  countByStatus: viewerProcedure.output(runStatusCountsOutput).query(({ ctx }) => runStatusCounts(ctx.db, ctx.scope)),

  /** Runs, newest first, filtered, one page at a time (keyset cursor over createdAt, id). */
  list: viewerProcedure
    .input(runListInput)
    .output(runListOutput)
    .query(({ ctx, input }) => listRuns(ctx.db, ctx.scope, input)),

  /** How many runs the list's filters match, over all pages: its own request, so a page turn does not count again. */
  count: viewerProcedure
    .input(runFilterInput.optional())
    .output(runCountOutput)
    .query(({ ctx, input }) => countRuns(ctx.db, ctx.scope, input ?? {})),

  /** Runs with a failure code, grouped by code with the catalogue's sentence. */
  failureGroups: viewerProcedure
    .input(runFilterInput.optional())
    .output(failureGroupsOutput)
    .query(({ ctx, input }) => failureGroups(ctx.db, ctx.scope, input ?? {})),

  /** Values the list's filters can take. */
  facets: viewerProcedure.output(runFacetsOutput).query(({ ctx }) => runFacets(ctx.db, ctx.scope)),

  /** Stuck runs (docs/rules.md §4) under the list's filters and a reason, each with why and the proof behind it; counts per reason. */
  stuck: viewerProcedure
    .input(stuckListInput)
    .output(stuckListOutput)
    .query(({ ctx, input }) => listStuck(ctx.db, ctx.scope, input)),

  /** One run with everything behind its state: timeline, claims, proofs, leases, lineage. */
  get: viewerProcedure
    .input(runIdInput)
    .output(runDetailOutput)
    .query(({ ctx, input }) => getRunDetail(ctx.db, ctx.scope, input.id)),

  /** The evidence bundles of the run's proofs, each accepted by `runwarden decide`. */
  evidence: viewerProcedure
    .input(runIdInput)
    .output(runEvidenceOutput)
    .query(({ ctx, input }) => runEvidence(ctx.db, ctx.scope, input.id)),

  /**
   * Queues a run for a task; whichever controller claims it executes it. Idempotent with a key
   * (the API's Idempotency-Key header, or the input's externalId: runs/submit-once.ts): the same
   * key and input answer the same run, `replayed`.
   */
  create: operatorProcedure
    .input(submitRunInput)
    .output(runSummarySchema.extend({ replayed: z.boolean() }))
    .mutation(async ({ ctx, input }) => {
      const { run, replayed } = await submitRunOnce(ctx.db, await ctx.instanceId(), input, ctx.actor, ctx.scope, ctx.idempotencyKey);
      return { ...pickRunSummary(run), replayed };
    }),

  /**
   * Retry (docs/rules.md §2.7): exactly one successor however often it is called, then one
   * scoped cleanup attempt for the old run's sandboxes (the sweep retries what fails).
   */
  retry: boardProcedure
    .input(z.object({ runId: uuidSchema }))
    .output(z.object({ run: runSummarySchema, created: z.boolean(), cleanup: z.array(z.object({ leaseId: z.string(), outcome: z.string() })) }))
    .mutation(async ({ ctx, input }) => {
      const result = await retryRun(ctx.db, input.runId, ctx.actor, ctx.scope);
      const cleanup = result.leasesQueued.length ? await (await ctx.services()).tearDownRetriedLeases(result.leasesQueued) : [];
      return { run: pickRunSummary(result.run), created: result.created, cleanup };
    }),

  /**
   * Cancel (docs/rules.md §2.11): takes the run over, stops its runner, tears its sandbox down and
   * rests it in `cancelled` with who and why. Board, like Retry: ending (and re-running) a run
   * of one's own companies is the same say over its outcome; an ended run is `refused`, not an error.
   */
  cancel: boardProcedure
    .input(cancelRunInput)
    .output(cancelRunOutput)
    .mutation(async ({ ctx, input }) => (await ctx.services()).cancelRun(ctx.scope, ctx.actor, input.runId, { reason: input.reason })),
});
