/**
 * What the dashboard needs of bulk Retry and Cancel (docs/rules.md §2.11): the confirm word the
 * server enforces, the plan's bound, and the per-run results a confirmation reports.
 */
export { bulkConfirmWord, BULK_PLAN_KINDS, BULK_PLAN_MAX_RUNS, BULK_PLAN_TTL_MS } from "../engine/bulk-confirmation";
export type { BulkPlanKind } from "../engine/bulk-confirmation";

/** What a confirmation did to one admitted run (a run retried by someone else since the preview is `refused`, with its reason). */
export const BULK_RESULTS = ["retried", "cancelled", "refused", "failed"] as const;
export type BulkResult = (typeof BULK_RESULTS)[number];
