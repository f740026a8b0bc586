import "server-only";

import { dehydrate, HydrationBoundary } from "@tanstack/react-query";
import { TRPCError } from "@trpc/server";
import { createTRPCOptionsProxy } from "@trpc/tanstack-react-query";
import { headers } from "next/headers";
import { notFound } from "next/navigation";
import { cache } from "react";
import { sessionUser } from "@/server/auth/users";
import { db } from "@/server/db";
import { appRouter } from "@/server/trpc/root";
import { createTRPCContext } from "@/server/trpc/trpc";
import { makeQueryClient } from "./query-client";

export const getQueryClient = cache(makeQueryClient);

/**
 * Who is signed in, read once per request: the layout, a page and every prefetch share it
 * (read per prefetch, a page load looked its session up six times, each a database read).
 */
export const requestUser = cache(async () => sessionUser(db(), new Headers(await headers())));

export const trpc = createTRPCOptionsProxy({
  ctx: cache(async () => createTRPCContext({ headers: new Headers(await headers()), user: await requestUser() })),
  router: appRouter,
  queryClient: getQueryClient,
});

export function HydrateClient({ children }: { children: React.ReactNode }) {
  return <HydrationBoundary state={dehydrate(getQueryClient())}>{children}</HydrationBoundary>;
}

/**
 * Prefetches one object's query for a detail page and answers HTTP 404 (the not-found
 * page) when the id is malformed, unknown or another company's. It runs before anything is
 * streamed (no loading boundary sits above a detail page), so the status is really 404.
 * Any other error is left for the page to show.
 */
export async function prefetchOrNotFound<T>(fetch: () => Promise<T>): Promise<T | null> {
  try {
    return await fetch();
  } catch (err) {
    if (err instanceof TRPCError && (err.code === "NOT_FOUND" || err.code === "BAD_REQUEST")) notFound();
    return null;
  }
}

/**
 * A live page's first "changed since" reading, awaited before its data is prefetched: the
 * page's baseline must be read before the data it vouches for (a change between the two
 * then makes one extra refetch, never a missed one — `advanceLive`).
 */
export async function prefetchLiveToken(): Promise<void> {
  await getQueryClient().prefetchQuery(trpc.live.token.queryOptions());
}
