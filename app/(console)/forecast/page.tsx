import type { Metadata } from "next";
import type { SearchParams } from "nuqs/server";
import { ForecastView } from "@/components/forecast/forecast-view";
import { loadForecastSearchParams, toForecastListInput } from "@/components/forecast/search-params";
import { PageHeader } from "@/components/ui";
import { getQueryClient, HydrateClient, prefetchLiveToken, trpc } from "@/trpc/server";

export const dynamic = "force-dynamic";
export const metadata: Metadata = { title: "Restart forecast" };

export default async function ForecastPage({ searchParams }: { searchParams: Promise<SearchParams> }) {
  const values = await loadForecastSearchParams(searchParams);
  await prefetchLiveToken();
  await getQueryClient().prefetchQuery(trpc.forecasts.list.queryOptions(toForecastListInput(values)));
  return (
    <HydrateClient>
      <PageHeader title="Restart forecast">
        What a controller restarted now would do to every run that has not ended — continues (how), ends (with which code and Retry), or left for an operator — judged by the same proofs recovery uses, without touching any run. Each forecast is kept; after the next real restart each run is checked: the forecast held, or what differed.
      </PageHeader>
      <ForecastView />
    </HydrateClient>
  );
}
