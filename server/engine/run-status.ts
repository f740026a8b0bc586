/**
 * The run statuses in which a run is live: it holds its task (at most one live run per
 * task, docs/rules.md §2.7 and chaos check R3), may hold a sandbox, and is not finished. The
 * one definition every module reads (the database index `runs_one_active_per_task` lists
 * the same four).
 */
export const LIVE_RUN_STATUSES = ["queued", "starting", "running", "suspended"] as const;
export type LiveRunStatus = (typeof LIVE_RUN_STATUSES)[number];

/** Live and being executed by some controller (recovery looks for these): not `queued`. */
export const EXECUTING_RUN_STATUSES = ["starting", "running", "suspended"] as const satisfies readonly LiveRunStatus[];

export function isLiveRunStatus(status: string): status is LiveRunStatus {
  return (LIVE_RUN_STATUSES as readonly string[]).includes(status);
}
