import { RunStatusCounts } from "@/components/run-status-counts";
import { getQueryClient, HydrateClient, trpc } from "@/trpc/server";

// Reads the database on every request; nothing here can be prerendered at build time.
export const dynamic = "force-dynamic";

export default async function HomePage() {
  await getQueryClient().prefetchQuery(trpc.runs.countByStatus.queryOptions());
  return (
    <HydrateClient>
      <h1 className="text-2xl font-semibold">Overview</h1>
      <p className="mt-1 text-sm text-zinc-600 dark:text-zinc-400">
        Runs known to this control plane, by status.
      </p>
      <RunStatusCounts />
    </HydrateClient>
  );
}
