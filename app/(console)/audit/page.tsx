import type { Metadata } from "next";
import type { SearchParams } from "nuqs/server";
import { AuditView } from "@/components/audit/audit-view";
import { loadAuditSearchParams, toAuditListInput } from "@/components/audit/search-params";
import { PageHeader } from "@/components/ui";
import { getQueryClient, HydrateClient, prefetchLiveToken, trpc } from "@/trpc/server";

export const dynamic = "force-dynamic";
export const metadata: Metadata = { title: "Audit log" };

export default async function AuditPage({ searchParams }: { searchParams: Promise<SearchParams> }) {
  const values = await loadAuditSearchParams(searchParams);
  await prefetchLiveToken();
  await getQueryClient().prefetchQuery(trpc.audit.list.queryOptions(toAuditListInput(values)));
  return (
    <HydrateClient>
      <PageHeader title="Audit log">
        Who did what, when, to which object, with what input and outcome — refused attempts included. Newest first, within your companies; filters live in the address.
      </PageHeader>
      <AuditView />
    </HydrateClient>
  );
}
