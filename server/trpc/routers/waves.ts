import { z } from "zod";
import { compareWaves, getWave, listWaves, waveCompareInput, waveCompareOutput, waveDetailOutput, waveIdInput, waveListOutput } from "../../waves/queries";
import { importWaveReportAudited } from "../../waves/store";
import { createTRPCRouter, operatorProcedure, viewerProcedure } from "../trpc";

export const wavesRouter = createTRPCRouter({
  list: viewerProcedure.output(waveListOutput).query(({ ctx }) => listWaves(ctx.db, ctx.scope)),
  get: viewerProcedure.input(waveIdInput).output(waveDetailOutput).query(({ ctx, input }) => getWave(ctx.db, ctx.scope, input.id)),
  compare: viewerProcedure.input(waveCompareInput).output(waveCompareOutput).query(({ ctx, input }) => compareWaves(ctx.db, ctx.scope, input.a, input.b)),
  /** Stores a report made elsewhere; a malformed or duplicate one is refused whole. */
  import: operatorProcedure
    .input(z.object({ report: z.unknown() }))
    .output(z.object({ id: z.string(), tasks: z.number().int(), passed: z.boolean() }))
    .mutation(async ({ ctx, input }) => {
      const report = await importWaveReportAudited(ctx.db, input.report, ctx.actor, ctx.scope);
      return { id: report.id, tasks: report.tasks.length, passed: report.passed };
    }),
});
