import type { Metadata } from "next";
import type { SearchParams } from "nuqs/server";
import { OrphansView } from "@/components/orphans/orphans-view";
import { loadOrphansSearchParams, toOrphanListInput } from "@/components/orphans/search-params";
import { PageHeader } from "@/components/ui";
import { getQueryClient, HydrateClient, trpc } from "@/trpc/server";

export const dynamic = "force-dynamic";
export const metadata: Metadata = { title: "Orphans" };

export default async function OrphansPage({ searchParams }: { searchParams: Promise<SearchParams> }) {
  const values = await loadOrphansSearchParams(searchParams);
  await getQueryClient().prefetchQuery(trpc.orphans.list.queryOptions(toOrphanListInput(values)));
  return (
    <HydrateClient>
      <PageHeader title="Orphaned sandboxes">
        This instance&apos;s sandboxes (listed by its instance label, never provider-wide) that no active lease of a live run holds, costliest first. Cost accrues from when it
        became an orphan: the earlier of its run finishing and its last lease ending; otherwise from its creation.
      </PageHeader>
      <OrphansView />
    </HydrateClient>
  );
}
