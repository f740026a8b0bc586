import type { Metadata } from "next";
import type { SearchParams } from "nuqs/server";
import { PageHeader } from "@/components/ui";
import { WaveCompare } from "@/components/waves/wave-compare";
import { loadCompareParams } from "@/components/waves/search-params";
import { getQueryClient, HydrateClient, trpc } from "@/trpc/server";

export const dynamic = "force-dynamic";
export const metadata: Metadata = { title: "Compare waves" };

export default async function ComparePage({ searchParams }: { searchParams: Promise<SearchParams> }) {
  const { a, b } = await loadCompareParams(searchParams);
  const qc = getQueryClient();
  await qc.prefetchQuery(trpc.waves.list.queryOptions());
  if (a && b) await qc.prefetchQuery(trpc.waves.compare.queryOptions({ a, b }));
  return (
    <HydrateClient>
      <PageHeader title="Compare waves">Two waves side by side: pass rates, the checks that changed per task, and the failure codes that appeared or vanished.</PageHeader>
      <WaveCompare />
    </HydrateClient>
  );
}
