"use client";

import { NuqsAdapter } from "nuqs/adapters/next/app";
import { TRPCReactProvider } from "@/trpc/react";
import { Toaster } from "./toast";

/** Client-side providers: tRPC + TanStack Query, URL state (nuqs) and toasts (sonner loads once the page is interactive). */
export function Providers({ children }: { children: React.ReactNode }) {
  return (
    <NuqsAdapter>
      <TRPCReactProvider>
        {children}
        <Toaster />
      </TRPCReactProvider>
    </NuqsAdapter>
  );
}
