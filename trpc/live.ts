import { useQuery, useQueryClient, type QueryFilters } from "@tanstack/react-query";
import { useEffect, useRef } from "react";
import { advanceLive, LIVE_POLL_MS, LIVE_SAFETY_MS, LIVE_TOKEN_INTERVAL_MS, type LiveState, type LiveTopic } from "@/server/shared/live";
import { isClientError } from "./errors";
import { useTRPC } from "./react";

/**
 * A refetch interval that stops on a 4xx: the answer will not change until the input does.
 * Polling runs only while the tab is visible (`refetchIntervalInBackground: false`).
 */
export function liveInterval(ms: number = LIVE_POLL_MS) {
  return (query: { state: { status: string; error: unknown } }) => (answeredClientError(query) ? false : ms);
}

/**
 * A live page's real queries (ARCHITECTURE.md, "Live pages"): an idle tab does not re-run them every few seconds;
 * `useLiveRefetch` refetches them when the token says something they show may have changed,
 * and this slow interval catches what the token does not cover (a process that died, time
 * passing).
 */
export const LIVE = { refetchInterval: liveInterval(LIVE_SAFETY_MS), refetchIntervalInBackground: false } as const;
export const liveEvery = (ms: number) => ({ refetchInterval: liveInterval(ms), refetchIntervalInBackground: false }) as const;
/** Queries whose answer is not in the database (the orphans page lists the provider). */
export const POLLED = { refetchInterval: liveInterval(), refetchIntervalInBackground: false } as const;

/** A 4xx is the answer until the input changes: a moved token does not ask again. */
function answeredClientError(query: { state: { status: string; error: unknown } }): boolean {
  return query.state.status === "error" && isClientError(query.state.error);
}

/**
 * Polls `live.token` while the tab is visible and invalidates `queries` (TanStack filters,
 * e.g. `trpc.runs.list.pathFilter()`) when one of `topics` moved, or when writers a reading
 * counted before they committed have ended (`advanceLive`). The page's server render
 * prefetches the token before its data, so the first reading is the baseline.
 */
export function useLiveRefetch(topics: readonly LiveTopic[], queries: readonly QueryFilters[]): void {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const token = useQuery({ ...trpc.live.token.queryOptions(), refetchInterval: liveInterval(LIVE_TOKEN_INTERVAL_MS), refetchIntervalInBackground: false });
  const state = useRef<LiveState | null>(null);
  const latest = useRef({ topics, queries });
  useEffect(() => {
    latest.current = { topics, queries };
  });
  const reading = token.data;
  useEffect(() => {
    if (!reading) return;
    const next = advanceLive(state.current, reading, latest.current.topics);
    state.current = next.state;
    if (next.refetch) for (const filter of latest.current.queries) void queryClient.invalidateQueries({ ...filter, predicate: (q) => !answeredClientError(q) && (filter.predicate?.(q) ?? true) });
  }, [reading, queryClient]);
}
