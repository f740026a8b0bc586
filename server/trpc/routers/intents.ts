import { intentListInput, intentListOutput, listIntents } from "../../intents/queries";
import { createTRPCRouter, publicProcedure } from "../trpc";

export const intentsRouter = createTRPCRouter({
  /** This instance's creation intents with the engine's live verdict on each creator. */
  list: publicProcedure
    .input(intentListInput)
    .output(intentListOutput)
    .query(({ ctx, input }) => listIntents(ctx.db, ctx.service(), ctx.instanceId, input)),
});
