import type { Metadata } from "next";
import { RedirectToSignIn } from "@/components/auth/redirect-to-sign-in";
import { AlertsView } from "@/components/alerts/alerts-view";
import { ALERT_EVENT_KINDS } from "@/components/alerts/event-kinds";
import { PageHeader } from "@/components/ui";
import { roleAllows } from "@/server/shared/roles";
import { getQueryClient, HydrateClient, requestUser, trpc } from "@/trpc/server";

export const dynamic = "force-dynamic";
export const metadata: Metadata = { title: "Alerts" };

export default async function AlertsPage() {
  const user = await requestUser();
  if (!user) return <RedirectToSignIn />;
  if (!roleAllows(user.role, "admin") || !user.scope.all) {
    return (
      <>
        <PageHeader title="Alerts" />
        <div role="note" className="max-w-2xl rounded border border-zinc-300 bg-zinc-50 p-4 text-sm dark:border-zinc-700 dark:bg-zinc-900" data-testid="needs-admin">
          <p className="font-medium">Alerts are configured by an admin who sees every company; you are signed in as {user.role}.</p>
          <p className="mt-1 text-zinc-700 dark:text-zinc-300">They carry every company&apos;s failed runs, outages and costs.</p>
        </div>
      </>
    );
  }
  await getQueryClient().prefetchQuery(trpc.alerts.list.queryOptions());
  return (
    <HydrateClient>
      <PageHeader title="Alerts">
        Outgoing webhooks, sent by the controllers from a durable outbox, signed the Standard Webhooks way, with a{" "}
        <code className="font-mono text-xs">text</code> field a Slack incoming webhook shows as is. Events:{" "}
        <span data-testid="alert-event-kinds">
          {ALERT_EVENT_KINDS.map(({ type, summary }, i) => (
            <span key={type}>
              {i > 0 ? "; " : ""}
              {summary} (<code className="font-mono text-xs">{type}</code>)
            </span>
          ))}
          .
        </span>
      </PageHeader>
      <AlertsView />
    </HydrateClient>
  );
}
