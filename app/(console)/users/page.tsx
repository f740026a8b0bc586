import type { Metadata } from "next";
import { RedirectToSignIn } from "@/components/auth/redirect-to-sign-in";
import { PageHeader } from "@/components/ui";
import { UsersView } from "@/components/users/users-view";
import { roleAllows } from "@/server/shared/roles";
import { getQueryClient, HydrateClient, requestUser, trpc } from "@/trpc/server";

export const dynamic = "force-dynamic";
export const metadata: Metadata = { title: "Users" };

export default async function UsersPage() {
  const user = await requestUser();
  if (!user) return <RedirectToSignIn />;
  if (!roleAllows(user.role, "admin")) {
    return (
      <>
        <PageHeader title="Users" />
        <div role="note" className="max-w-2xl rounded border border-zinc-300 bg-zinc-50 p-4 text-sm dark:border-zinc-700 dark:bg-zinc-900" data-testid="needs-admin">
          <p className="font-medium">Managing people needs the admin role; you are signed in as {user.role}.</p>
          <p className="mt-1 text-zinc-700 dark:text-zinc-300">Ask an admin to add someone or to change a role.</p>
        </div>
      </>
    );
  }
  await getQueryClient().prefetchQuery(trpc.users.list.queryOptions());
  return (
    <HydrateClient>
      <PageHeader title="Users">
        The people who can sign in, with their role and companies. There is no sign-up: people are added here or with{" "}
        <code className="font-mono text-xs">npm run -s runwarden -- user add</code>.
      </PageHeader>
      <UsersView />
    </HydrateClient>
  );
}
