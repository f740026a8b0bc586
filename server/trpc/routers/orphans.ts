import { destroyUnrecordedInput, destroyUnrecordedOutput } from "../../sandboxes/destroy-unrecorded";
import { reclaimInput, reclaimOutput } from "../../sandboxes/dry-run";
import { listOrphans, orphanListInput, orphanListOutput } from "../../sandboxes/list";
import { createTRPCRouter, operatorProcedure, viewerProcedure } from "../trpc";

export const orphansRouter = createTRPCRouter({
  /** This instance's sandboxes no live run holds, costliest first, with an ownership verdict. */
  list: viewerProcedure
    .input(orphanListInput)
    .output(orphanListOutput)
    .query(async ({ ctx, input }) => listOrphans(ctx.db, (await ctx.services()).observer, ctx.scope, await ctx.instanceId(), input)),

  /**
   * Dry run (`dryRun: true`): what would be destroyed and what is refused, touching nothing.
   * Real (`dryRun: false`, the dry run's `planId`, and the typed `confirm`): destroys only
   * what is still reclaimable when looked at again, and reports each sandbox's outcome.
   */
  reclaim: operatorProcedure
    .input(reclaimInput)
    .output(reclaimOutput)
    .mutation(async ({ ctx, input }) => {
      const services = await ctx.services();
      return input.dryRun ? services.previewReclaim(ctx.scope, ctx.actor, input) : services.executeReclaim(ctx.scope, ctx.actor, input);
    }),

  /**
   * One `unrecorded` sandbox (this instance's labels, no record of this instance naming
   * it), destroyed only when the operator types its exact name; never in a batch.
   */
  destroyUnrecorded: operatorProcedure
    .input(destroyUnrecordedInput)
    .output(destroyUnrecordedOutput)
    .mutation(async ({ ctx, input }) => (await ctx.services()).destroyUnrecorded(ctx.scope, ctx.actor, input)),
});
