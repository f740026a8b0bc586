import { z } from "zod";
import { confirmBulkPlan, type CancelOne } from "../../runs/bulk-confirm";
import type { Services } from "../../services";
import { bulkConfirmInput, bulkPlanIdInput, bulkPlanSchema, getBulkPlan } from "../../runs/bulk-plan";
import { bulkPreviewInput, previewBulkPlan } from "../../runs/bulk-preview";
import { createTRPCRouter, operatorProcedure } from "../trpc";

/** Bulk Retry and Cancel (docs/rules.md §2.11): a preview that touches nothing, then a confirmation that names it. */

export const bulkPreviewOutput = bulkPlanSchema;
export const bulkConfirmOutput = bulkPlanSchema.extend({ cleanup: z.array(z.object({ leaseId: z.string(), outcome: z.string() })) });

export const plansRouter = createTRPCRouter({
  /** Judges each run the filter names (≤ 1,000) as Retry or Cancel would, and stores the plan with its confirm word; changes no run. */
  preview: operatorProcedure
    .input(bulkPreviewInput)
    .output(bulkPreviewOutput)
    .mutation(async ({ ctx, input }) => previewBulkPlan(ctx.db, await ctx.instanceId(), ctx.scope, ctx.actor, input)),

  /** Carries out the runs the preview admitted, each judged again now; the same per-run results however often it is called. */
  confirm: operatorProcedure
    .input(bulkConfirmInput)
    .output(bulkConfirmOutput)
    .mutation(async ({ ctx, input }) => {
      // Built once, on first need (a cancel plan's runs, a retried run's leases).
      let services: Promise<Services> | undefined;
      const servicesOnce = () => (services ??= ctx.services());
      const cancel: CancelOne = async (tx, runId, options) => (await servicesOnce()).cancelRunIn(tx, ctx.scope, ctx.actor, runId, options);
      const { plan, leasesQueued } = await confirmBulkPlan(ctx.db, await ctx.instanceId(), ctx.scope, ctx.actor, input, { cancel });
      // Retry's one scoped cleanup attempt of the old runs' leases (the sweep retries what fails).
      const cleanup = leasesQueued.length ? await (await servicesOnce()).tearDownRetriedLeases(leasesQueued) : [];
      return { ...plan, cleanup };
    }),

  /** A plan with its items: the preview's admissions and what the confirmation did. */
  get: operatorProcedure
    .input(bulkPlanIdInput)
    .output(bulkPlanSchema)
    .query(async ({ ctx, input }) => getBulkPlan(ctx.db, await ctx.instanceId(), ctx.scope, input.planId)),
});
