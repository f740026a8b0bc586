import type { Metadata } from "next";
import { setTimeout as sleep } from "node:timers/promises";
import type { SearchParams } from "nuqs/server";
import { loadRunsSearchParams, toRunFilter, toRunListInput } from "@/components/runs/search-params";
import { RunsView } from "@/components/runs/runs-view";
import { PageHeader } from "@/components/ui";
import { getQueryClient, HydrateClient, prefetchLiveToken, trpc } from "@/trpc/server";

export const dynamic = "force-dynamic";
const GROUPS_GRACE_MS = 50;
export const metadata: Metadata = { title: "Runs" };

export default async function RunsPage({ searchParams }: { searchParams: Promise<SearchParams> }) {
  const values = await loadRunsSearchParams(searchParams);
  const qc = getQueryClient();
  await prefetchLiveToken();
  // The list is what the page is for: it is awaited; the total and the filters' suggestions are
  // asked for after it and stream in (pending queries are dehydrated), so they neither hold the
  // first paint nor compete with the list for the database (issue 13).
  const groups = qc.prefetchQuery(trpc.runs.failureGroups.queryOptions(toRunFilter(values)));
  await qc.prefetchQuery(trpc.runs.list.queryOptions(toRunListInput(values)));
  void qc.prefetchQuery(trpc.runs.count.queryOptions(toRunFilter(values)));
  void qc.prefetchQuery(trpc.runs.facets.queryOptions());
  // Failure groups that have answered by then (they read maintained rollups) go out with the
  // list's HTML. Streamed in later instead, React reveals them no sooner than 300 ms after the
  // first paint (its reveal throttle), and as the page's largest element they set its LCP.
  // A slow answer (a filter the rollups cannot serve) holds the list back by GROUPS_GRACE_MS at most.
  await Promise.race([groups, sleep(GROUPS_GRACE_MS)]);
  return (
    <HydrateClient>
      <PageHeader title="Runs">Every run, newest first. Filters live in the address, so a link reproduces this view.</PageHeader>
      <RunsView />
    </HydrateClient>
  );
}
