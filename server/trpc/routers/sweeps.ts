import { z } from "zod";
import { createTRPCRouter, operatorProcedure } from "../trpc";

const summarySchema = z.object({
  kind: z.enum(["creation_intents", "teardown"]),
  passId: z.string(),
  judged: z.number().int(),
  pages: z.number().int(),
  verdicts: z.record(z.string(), z.number().int()),
  reclaimed: z.number().int(),
  destroyed: z.number().int(),
  decisions: z.array(z.object({ id: z.string(), verdict: z.string(), reason: z.string().nullable() })),
});

export const sweepsRouter = createTRPCRouter({
  /** Runs the sweeps now, in this process, and reports what they decided. */
  run: operatorProcedure
    .input(z.object({ kind: z.enum(["all", "creation_intents", "teardown"]).default("all") }).default({ kind: "all" }))
    .output(z.array(summarySchema))
    .mutation(async ({ ctx, input }) => (await ctx.services()).sweepNow(ctx.scope, input.kind, ctx.actor)),
});
