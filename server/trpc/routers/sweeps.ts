import { z } from "zod";
import { sweepSummarySchema } from "../../services";
import { createTRPCRouter, operatorProcedure } from "../trpc";

export const sweepsRouter = createTRPCRouter({
  /** Runs the sweeps now, in this process, and reports what they decided. */
  run: operatorProcedure
    .input(z.object({ kind: z.enum(["all", "creation_intents", "teardown"]).default("all") }).default({ kind: "all" }))
    .output(z.array(sweepSummarySchema))
    .mutation(async ({ ctx, input }) => (await ctx.services()).sweepNow(ctx.scope, input.kind, ctx.actor)),
});
