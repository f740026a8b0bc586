import { createLoader, parseAsString, parseAsStringLiteral } from "nuqs/server";
import type { RouterInputs } from "@/trpc/types";

/** The forecast page's URL state: which forecast is open and its filters (server prefetch and client share it). */
export const FORECAST_PREDICTION_FILTER = ["continues", "ends", "operator"] as const;
export const FORECAST_OUTCOME_FILTER = ["held", "differed", "not_restarted", "pending"] as const;
export const FORECAST_SOURCE_FILTER = ["cli", "console", "wave", "api"] as const;

export const forecastSearchParams = {
  forecast: parseAsString,
  prediction: parseAsStringLiteral(FORECAST_PREDICTION_FILTER),
  outcome: parseAsStringLiteral(FORECAST_OUTCOME_FILTER),
  source: parseAsStringLiteral(FORECAST_SOURCE_FILTER),
};

export const loadForecastSearchParams = createLoader(forecastSearchParams);
export type ForecastValues = Awaited<ReturnType<typeof loadForecastSearchParams>>;

export function toForecastListInput(v: ForecastValues): RouterInputs["forecasts"]["list"] {
  return { source: v.source ?? undefined, limit: 20 };
}

export function toForecastGetInput(v: ForecastValues, id: string): RouterInputs["forecasts"]["get"] {
  return { id, prediction: v.prediction ?? undefined, outcome: v.outcome ?? undefined };
}
