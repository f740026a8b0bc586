import type { Metadata } from "next";
import type { SearchParams } from "nuqs/server";
import { loadRunsSearchParams, toRunFilter, toRunListInput } from "@/components/runs/search-params";
import { RunsView } from "@/components/runs/runs-view";
import { PageHeader } from "@/components/ui";
import { getQueryClient, HydrateClient, trpc } from "@/trpc/server";

export const dynamic = "force-dynamic";
export const metadata: Metadata = { title: "Runs" };

export default async function RunsPage({ searchParams }: { searchParams: Promise<SearchParams> }) {
  const values = await loadRunsSearchParams(searchParams);
  const qc = getQueryClient();
  await Promise.all([
    qc.prefetchQuery(trpc.runs.list.queryOptions(toRunListInput(values))),
    qc.prefetchQuery(trpc.runs.failureGroups.queryOptions(toRunFilter(values))),
    qc.prefetchQuery(trpc.runs.facets.queryOptions()),
  ]);
  return (
    <HydrateClient>
      <PageHeader title="Runs">Every run, newest first. Filters live in the address, so a link reproduces this view.</PageHeader>
      <RunsView />
    </HydrateClient>
  );
}
