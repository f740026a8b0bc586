/**
 * Live lists poll while the tab is visible, at a pace that keeps the database idle between
 * reads: a few cheap indexed queries every few seconds per open tab.
 */
export const LIVE = { refetchInterval: 4_000, refetchIntervalInBackground: false } as const;
