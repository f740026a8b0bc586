import { TRPCError } from "@trpc/server";
import type { Metadata } from "next";
import { notFound } from "next/navigation";
import { RunDetail } from "@/components/run-detail/run-detail";
import { getQueryClient, HydrateClient, trpc } from "@/trpc/server";

export const dynamic = "force-dynamic";

export async function generateMetadata({ params }: { params: Promise<{ id: string }> }): Promise<Metadata> {
  const { id } = await params;
  return { title: `Run ${id.slice(0, 8)}` };
}

export default async function RunPage({ params }: { params: Promise<{ id: string }> }) {
  const { id } = await params;
  try {
    await getQueryClient().fetchQuery(trpc.runs.get.queryOptions({ id }));
  } catch (err) {
    // A malformed or unknown id is a missing page; anything else the page shows itself.
    if (err instanceof TRPCError && (err.code === "NOT_FOUND" || err.code === "BAD_REQUEST")) notFound();
  }
  return (
    <HydrateClient>
      <RunDetail id={id} />
    </HydrateClient>
  );
}
