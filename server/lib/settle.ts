/**
 * The earliest settle deadline after an intent's creation (docs/rules.md §2.5): a create may
 * still be answered until its timeout, and the provider can finish it a little later still.
 * Shared by the environment's validation and the acquire path (no I/O, no environment).
 */
export function settleFloorMs(createTimeoutMs: number): number {
  return createTimeoutMs + Math.max(1_000, Math.round(createTimeoutMs / 2));
}
