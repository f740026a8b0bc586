import { intentListInput, intentListOutput, listIntents } from "../../intents/queries";
import { createTRPCRouter, viewerProcedure } from "../trpc";

export const intentsRouter = createTRPCRouter({
  /** This instance's creation intents with the engine's live verdict on each creator. */
  list: viewerProcedure
    .input(intentListInput)
    .output(intentListOutput)
    .query(async ({ ctx, input }) => listIntents(ctx.db, (await ctx.services()).observer, ctx.scope, await ctx.instanceId(), input)),
});
