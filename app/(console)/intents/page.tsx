import type { Metadata } from "next";
import type { SearchParams } from "nuqs/server";
import { IntentsView } from "@/components/intents/intents-view";
import { loadIntentsSearchParams, toIntentListInput } from "@/components/intents/search-params";
import { PageHeader } from "@/components/ui";
import { getQueryClient, HydrateClient, prefetchLiveToken, trpc } from "@/trpc/server";

export const dynamic = "force-dynamic";
export const metadata: Metadata = { title: "Intents" };

export default async function IntentsPage({ searchParams }: { searchParams: Promise<SearchParams> }) {
  const values = await loadIntentsSearchParams(searchParams);
  await prefetchLiveToken();
  await getQueryClient().prefetchQuery(trpc.intents.list.queryOptions(toIntentListInput(values)));
  return (
    <HydrateClient>
      <PageHeader title="Sandbox-creation intents">
        Written before each provider create call. A pending intent is left alone while its creator may still be waiting; the creator&apos;s verdict is the engine&apos;s, judged now
        from this host.
      </PageHeader>
      <IntentsView />
    </HydrateClient>
  );
}
