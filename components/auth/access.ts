"use client";

import { useQuery } from "@tanstack/react-query";
import { useTRPC } from "@/trpc/react";
import { permission, type GuardedProcedure } from "./permissions";

/** The signed-in person (prefetched by the console layout, so it is there on first paint). */
export function useMe() {
  const trpc = useTRPC();
  return useQuery({ ...trpc.me.get.queryOptions(), staleTime: 60_000 });
}

/**
 * Whether the signed-in person's role allows a control, and if not, why in words. The
 * server refuses the call either way; this only keeps a control from inviting a refusal.
 */
export function usePermission(procedure: GuardedProcedure, action: string): { allowed: boolean; reason: string | null } {
  return permission(useMe().data?.role ?? null, procedure, action);
}
