import type { Metadata } from "next";
import { setTimeout as sleep } from "node:timers/promises";
import type { SearchParams } from "nuqs/server";
import { loadRunsSearchParams, toRunFilter, toRunListInput, toStuckInput } from "@/components/runs/search-params";
import { RunsView } from "@/components/runs/runs-view";
import { PageHeader } from "@/components/ui";
import { getQueryClient, HydrateClient, prefetchLiveToken, trpc } from "@/trpc/server";

export const dynamic = "force-dynamic";
const GRACE_MS = 50;
export const metadata: Metadata = { title: "Runs" };

export default async function RunsPage({ searchParams }: { searchParams: Promise<SearchParams> }) {
  const values = await loadRunsSearchParams(searchParams);
  const qc = getQueryClient();
  await prefetchLiveToken();
  // The list is what the page is for: it is awaited. The groups and the total are asked for
  // alongside it; those that have answered GRACE_MS after the list go out in its HTML (the
  // groups read maintained rollups, and are the page's largest element: its LCP), the browser
  // asks for any other itself once the page is live. A slow answer (a filter the rollups cannot
  // serve) holds the list back by GRACE_MS at most (ARCHITECTURE.md, "Live pages"). The filters' suggestions are the
  // browser's to ask for: in the HTML they were hundreds of options to send and hydrate before
  // anyone opens a filter.
  const filter = toRunFilter(values);
  if (values.stuck) {
    // Under the stuck filter the page shows the stuck runs alone (docs/rules.md §4, "Stuck runs").
    await qc.prefetchQuery(trpc.runs.stuck.queryOptions(toStuckInput(values)));
  } else {
    const groups = qc.prefetchQuery(trpc.runs.failureGroups.queryOptions(filter));
    await qc.prefetchQuery(trpc.runs.list.queryOptions(toRunListInput(values)));
    await Promise.race([Promise.all([groups, qc.prefetchQuery(trpc.runs.count.queryOptions(filter))]), sleep(GRACE_MS)]);
  }
  return (
    <HydrateClient>
      <PageHeader title="Runs">Every run, newest first. Filters live in the address, so a link reproduces this view.</PageHeader>
      <RunsView />
    </HydrateClient>
  );
}
