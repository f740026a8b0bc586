import { dehydrate, hashKey, HydrationBoundary } from "@tanstack/react-query";
import { RedirectToSignIn } from "@/components/auth/redirect-to-sign-in";
import { Nav } from "@/components/nav";
import { meOf } from "@/server/trpc/routers/me";
import { getQueryClient, requestUser, trpc } from "@/trpc/server";

// Who is signed in is read on every request.
export const dynamic = "force-dynamic";

/**
 * Every console page is behind sign-in: without a session, the page is not rendered and the
 * browser goes to /sign-in?next=<this page>. (The API refuses on its own as well.)
 */
export default async function ConsoleLayout({ children }: { children: React.ReactNode }) {
  const user = await requestUser();
  if (!user) return <RedirectToSignIn />;

  // me.get's answer, known already: the nav and every guarded control have it on first paint.
  const queryClient = getQueryClient();
  const key = trpc.me.get.queryKey();
  queryClient.setQueryData(key, meOf(user));
  const meHash = hashKey(key);
  return (
    <HydrationBoundary state={dehydrate(queryClient, { shouldDehydrateQuery: (q) => q.queryHash === meHash })}>
      <header className="border-b border-zinc-200 dark:border-zinc-800">
        <Nav />
      </header>
      <main id="main" className="mx-auto max-w-7xl px-4 py-6">
        {children}
      </main>
    </HydrationBoundary>
  );
}
