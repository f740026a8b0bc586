import { Overview } from "@/components/overview/overview";
import { PageHeader } from "@/components/ui";
import { getQueryClient, HydrateClient, prefetchLiveToken, trpc } from "@/trpc/server";

// Reads the database on every request; nothing here can be prerendered at build time.
export const dynamic = "force-dynamic";

export default async function HomePage() {
  await prefetchLiveToken();
  await getQueryClient().prefetchQuery(trpc.overview.get.queryOptions({}));
  return (
    <HydrateClient>
      <PageHeader title="Overview">What needs attention now, each a link to the runs, intents, orphans or wave behind it.</PageHeader>
      <Overview />
    </HydrateClient>
  );
}
