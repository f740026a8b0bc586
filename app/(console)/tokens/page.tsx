import type { Metadata } from "next";
import { RedirectToSignIn } from "@/components/auth/redirect-to-sign-in";
import { TokensView } from "@/components/tokens/tokens-view";
import { PageHeader } from "@/components/ui";
import { roleAllows } from "@/server/shared/roles";
import { getQueryClient, HydrateClient, requestUser, trpc } from "@/trpc/server";

export const dynamic = "force-dynamic";
export const metadata: Metadata = { title: "API tokens" };

export default async function TokensPage() {
  const user = await requestUser();
  if (!user) return <RedirectToSignIn />;
  if (!roleAllows(user.role, "admin")) {
    return (
      <>
        <PageHeader title="API tokens" />
        <div role="note" className="max-w-2xl rounded border border-zinc-300 bg-zinc-50 p-4 text-sm dark:border-zinc-700 dark:bg-zinc-900" data-testid="needs-admin">
          <p className="font-medium">Managing API tokens needs the admin role; you are signed in as {user.role}.</p>
          <p className="mt-1 text-zinc-700 dark:text-zinc-300">Ask an admin to make a token for your program or to revoke one.</p>
        </div>
      </>
    );
  }
  await getQueryClient().prefetchQuery(trpc.tokens.list.queryOptions());
  return (
    <HydrateClient>
      <PageHeader title="API tokens">
        Tokens for programs that call Runwarden over HTTP (<code className="font-mono text-xs">Authorization: Bearer rw_…</code>), each with a role below admin, some of your
        companies and an expiry. Also <code className="font-mono text-xs">npm run -s runwarden -- token create</code>.
      </PageHeader>
      <TokensView />
    </HydrateClient>
  );
}
