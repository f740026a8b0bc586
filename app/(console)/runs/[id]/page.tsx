import type { Metadata } from "next";
import { RunDetail } from "@/components/run-detail/run-detail";
import { getQueryClient, HydrateClient, prefetchLiveToken, prefetchOrNotFound, trpc } from "@/trpc/server";

export const dynamic = "force-dynamic";

export async function generateMetadata({ params }: { params: Promise<{ id: string }> }): Promise<Metadata> {
  const { id } = await params;
  return { title: `Run ${id.slice(0, 8)}` };
}

export default async function RunPage({ params }: { params: Promise<{ id: string }> }) {
  const { id } = await params;
  await prefetchLiveToken();
  // A malformed, unknown or another company's id is HTTP 404; anything else the page shows.
  await prefetchOrNotFound(() => getQueryClient().fetchQuery(trpc.runs.get.queryOptions({ id })));
  return (
    <HydrateClient>
      <RunDetail id={id} />
    </HydrateClient>
  );
}
