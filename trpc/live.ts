import { isClientError } from "./errors";

export const LIVE_INTERVAL_MS = 4_000;

/**
 * Live lists poll while the tab is visible, at a pace that keeps the database idle between
 * reads: a few cheap indexed queries every few seconds per open tab. A 4xx stops the
 * polling: the answer will not change until the input does.
 */
export function liveInterval(ms: number = LIVE_INTERVAL_MS) {
  return (query: { state: { status: string; error: unknown } }) => (query.state.status === "error" && isClientError(query.state.error) ? false : ms);
}

export const LIVE = { refetchInterval: liveInterval(), refetchIntervalInBackground: false } as const;
