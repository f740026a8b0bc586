import { getOverview, overviewInput, overviewOutput } from "../../overview";
import { createTRPCRouter, viewerProcedure } from "../trpc";

export const overviewRouter = createTRPCRouter({
  /** What needs attention now: runs by status, failures awaiting Retry, overdue intents, orphans' cost, the last wave. */
  get: viewerProcedure
    .input(overviewInput)
    .output(overviewOutput)
    .query(async ({ ctx }) => getOverview(ctx.db, (await ctx.services()).observer, ctx.scope, await ctx.instanceId())),
});
