/**
 * The words an operator types to confirm a reclaim of `n` sandboxes. Shared by the server,
 * which enforces it, and the dashboard, which shows it (so this file imports nothing).
 */
export function confirmWord(n: number): string {
  return `destroy ${n}`;
}

/** Ownership verdicts of a sandbox on the orphans page. */
export const OWNERSHIP_VERDICTS = ["reclaimable", "unrecorded", "live_creator", "foreign", "unknown"] as const;
export type OwnershipVerdict = (typeof OWNERSHIP_VERDICTS)[number];
