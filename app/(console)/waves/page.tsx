import type { Metadata } from "next";
import { PageHeader } from "@/components/ui";
import { CHECK_IDS } from "@/server/shared/wave-checks";
import { WavesList } from "@/components/waves/waves-list";
import { getQueryClient, HydrateClient, prefetchLiveToken, trpc } from "@/trpc/server";

export const dynamic = "force-dynamic";
export const metadata: Metadata = { title: "Chaos waves" };

export default async function WavesPage() {
  await prefetchLiveToken();
  await getQueryClient().prefetchQuery(trpc.waves.list.queryOptions());
  return (
    <HydrateClient>
      <PageHeader title="Restart-chaos waves">
        Each wave runs tasks through real controller restarts and faults, then checks every recovery invariant ({CHECK_IDS[0]}–{CHECK_IDS.at(-1)}) per task. Run one with{" "}
        <code className="font-mono text-xs">npm run wave</code>; pick two to compare.
      </PageHeader>
      <WavesList />
    </HydrateClient>
  );
}
