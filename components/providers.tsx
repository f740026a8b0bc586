"use client";

import { NuqsAdapter } from "nuqs/adapters/next/app";
import { Tooltip } from "radix-ui";
import { Toaster } from "sonner";
import { TRPCReactProvider } from "@/trpc/react";

/** Client-side providers: tRPC + TanStack Query, URL state (nuqs), tooltips and toasts. */
export function Providers({ children }: { children: React.ReactNode }) {
  return (
    <NuqsAdapter>
      <TRPCReactProvider>
        <Tooltip.Provider delayDuration={200}>
          {children}
          <Toaster theme="system" closeButton />
        </Tooltip.Provider>
      </TRPCReactProvider>
    </NuqsAdapter>
  );
}
