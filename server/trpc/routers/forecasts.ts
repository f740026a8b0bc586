import { z } from "zod";
import { forecastDetailSchema, forecastForRunInput, forecastForRunSchema, forecastGetInput, forecastListInput, forecastSummarySchema, getForecast, latestForecastOfRun, listForecasts } from "../../forecasts/read";
import { storeForecast } from "../../forecasts/store";
import { forecastCountsSchema } from "../../shared/forecast";
import { createTRPCRouter, operatorProcedure, viewerProcedure } from "../trpc";

/** Restart forecasts (docs/rules.md §2.12): the stored ones, and taking one from the console. */

export const forecastsListOutput = z.array(forecastSummarySchema);
export const forecastsGetOutput = forecastDetailSchema;
export const forecastsForRunOutput = forecastForRunSchema;
export const forecastsTakeInput = z.object({}).strict();
export const forecastsTakeOutput = z.object({ id: z.string(), counts: forecastCountsSchema, durationMs: z.number().int() });

export const forecastsRouter = createTRPCRouter({
  /** The latest stored forecasts with their counts and how many runs were checked after a restart. */
  list: viewerProcedure
    .input(forecastListInput.default({ limit: 20 }))
    .output(forecastsListOutput)
    .query(async ({ ctx, input }) => listForecasts(ctx.db, await ctx.instanceId(), ctx.scope, input)),

  /** One forecast with its runs (filtered by prediction or check outcome). */
  get: viewerProcedure
    .input(forecastGetInput)
    .output(forecastsGetOutput)
    .query(async ({ ctx, input }) => getForecast(ctx.db, await ctx.instanceId(), ctx.scope, input)),

  /** The latest forecast of one run and whether it held (the run page). */
  forRun: viewerProcedure
    .input(forecastForRunInput)
    .output(forecastsForRunOutput)
    .query(async ({ ctx, input }) => latestForecastOfRun(ctx.db, await ctx.instanceId(), ctx.scope, input.runId)),

  /** Takes a forecast of the runs in this person's companies (read-only on every run) and stores it; audited as forecast.take. */
  take: operatorProcedure
    .input(forecastsTakeInput)
    .output(forecastsTakeOutput)
    .mutation(async ({ ctx }) => {
      const services = await ctx.services();
      const forecast = await services.takeForecast(ctx.scope);
      const stored = await storeForecast(ctx.db, forecast, { instanceId: services.instanceId, actor: ctx.actor, source: "console", scope: ctx.scope });
      return { id: stored.id, counts: forecast.counts, durationMs: forecast.durationMs };
    }),
});
