/**
 * The sweeps of docs/rules.md §2.5 (creation intents) and §2.6 (teardown), split by rule:
 * `pass.ts` (a pass's row and summary), `intent-pages.ts` (the pending intents' pager),
 * `creation-intents.ts` (§2.5), `late.ts` (late materialisation, §2.5), `reclaim-writes.ts`
 * (the reclaim both intent paths write), `teardown.ts` (§2.6).
 */
export { reclaimBatching, sweepCreationIntents } from "./creation-intents";
export { pendingIntentsPage, type PendingIntent, type PendingIntentRow } from "./intent-pages";
export { LATE_MATERIALISATION_WINDOW_MS } from "./late";
export { sweepSummarySchema, type SweepSummary } from "./pass";
export { reclaimWriteSql, type ReclaimRows } from "./reclaim-writes";
export { sweepTeardown } from "./teardown";
