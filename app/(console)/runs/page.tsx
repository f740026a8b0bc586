import type { Metadata } from "next";
import type { SearchParams } from "nuqs/server";
import { loadRunsSearchParams, toRunFilter, toRunListInput } from "@/components/runs/search-params";
import { RunsView } from "@/components/runs/runs-view";
import { PageHeader } from "@/components/ui";
import { getQueryClient, HydrateClient, prefetchLiveToken, trpc } from "@/trpc/server";

export const dynamic = "force-dynamic";
export const metadata: Metadata = { title: "Runs" };

export default async function RunsPage({ searchParams }: { searchParams: Promise<SearchParams> }) {
  const values = await loadRunsSearchParams(searchParams);
  const qc = getQueryClient();
  await prefetchLiveToken();
  // The list is what the page is for: it is awaited; the total and the aggregates stream in after it
  // (pending queries are dehydrated), so they never hold the first paint (issue 13).
  void qc.prefetchQuery(trpc.runs.count.queryOptions(toRunFilter(values)));
  void qc.prefetchQuery(trpc.runs.failureGroups.queryOptions(toRunFilter(values)));
  void qc.prefetchQuery(trpc.runs.facets.queryOptions());
  await qc.prefetchQuery(trpc.runs.list.queryOptions(toRunListInput(values)));
  return (
    <HydrateClient>
      <PageHeader title="Runs">Every run, newest first. Filters live in the address, so a link reproduces this view.</PageHeader>
      <RunsView />
    </HydrateClient>
  );
}
