import type { Metadata } from "next";
import { WaveDetail } from "@/components/waves/wave-detail";
import { getQueryClient, HydrateClient, prefetchOrNotFound, trpc } from "@/trpc/server";

export const dynamic = "force-dynamic";

export async function generateMetadata({ params }: { params: Promise<{ id: string }> }): Promise<Metadata> {
  return { title: `Wave ${(await params).id}` };
}

export default async function WavePage({ params }: { params: Promise<{ id: string }> }) {
  const { id } = await params;
  // A malformed, unknown or another company's id is HTTP 404; anything else the page shows.
  await prefetchOrNotFound(() => getQueryClient().fetchQuery(trpc.waves.get.queryOptions({ id })));
  return (
    <HydrateClient>
      <WaveDetail id={id} />
    </HydrateClient>
  );
}
