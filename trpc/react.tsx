"use client";

import { QueryClientProvider, type QueryClient } from "@tanstack/react-query";
import { createTRPCClient, httpBatchLink, TRPCClientError } from "@trpc/client";
import { createTRPCContext } from "@trpc/tanstack-react-query";
import { useState } from "react";
import superjson from "superjson";
import { signInHref } from "@/components/auth/next-path";
import type { AppRouter } from "@/server/trpc/root";
import { makeQueryClient } from "./query-client";

export const { TRPCProvider, useTRPC } = createTRPCContext<AppRouter>();

/**
 * A session that ended while a page was open (signed out in another tab, expired): the next
 * answer is UNAUTHORIZED, and the page goes to sign-in, remembering where it was.
 */
let leaving = false;
function onSignedOut(error: unknown) {
  if (leaving || !(error instanceof TRPCClientError)) return;
  const code = (error.data as { code?: unknown } | undefined)?.code;
  if (code !== "UNAUTHORIZED") return;
  leaving = true;
  window.location.replace(signInHref(`${window.location.pathname}${window.location.search}`));
}

/** Well under Node's default 16 KB for the request line and headers (cookies included). */
const MAX_URL_LENGTH = 8_000;

let browserQueryClient: QueryClient | undefined;
function getQueryClient() {
  if (typeof window === "undefined") return makeQueryClient();
  browserQueryClient ??= makeQueryClient(onSignedOut);
  return browserQueryClient;
}

export function TRPCReactProvider({ children }: { children: React.ReactNode }) {
  const queryClient = getQueryClient();
  const [trpcClient] = useState(() =>
    createTRPCClient<AppRouter>({
      links: [
        // A batch is one GET whose URL carries every input: past Node's 16 KB header limit the
        // server answers 431 with no tRPC error (not a 4xx the page recognises, so retried and
        // polled). Three 5,000-character searches did that on /runs; longer batches are split.
        httpBatchLink({ url: "/api/trpc", transformer: superjson, maxURLLength: MAX_URL_LENGTH }),
      ],
    }),
  );
  return (
    <QueryClientProvider client={queryClient}>
      <TRPCProvider trpcClient={trpcClient} queryClient={queryClient}>
        {children}
      </TRPCProvider>
    </QueryClientProvider>
  );
}
