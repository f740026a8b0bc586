import { z } from "zod";
import { writeAudit } from "../../audit/write";
import { sweepCreationIntents, sweepTeardown, type SweepSummary } from "../../controller/sweeps";
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
    .mutation(async ({ ctx, input }) => {
      const service = await ctx.service();
      const results: SweepSummary[] = [];
      // Only the companies this person acts for are swept.
      const companies = ctx.scope.all ? undefined : ctx.scope.companies;
      if (input.kind !== "teardown") results.push(await sweepCreationIntents(service, "manual", companies));
      if (input.kind !== "creation_intents") results.push(await sweepTeardown(service, "manual", companies));
      await writeAudit(ctx.db, ctx.actor, {
        action: "sweep.run",
        targetType: "sweep",
        targetId: results.map((r) => r.passId).join(","),
        input,
        outcome: "ok",
        detail: results.map((r) => ({ kind: r.kind, judged: r.judged, verdicts: r.verdicts, reclaimed: r.reclaimed, destroyed: r.destroyed })),
      });
      return results;
    }),
});
