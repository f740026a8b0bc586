/**
 * A controller silent past the window no longer holds its runs (docs/rules.md §2.10): another
 * host cannot be probed, so silence is the only evidence there. The one definition the
 * controller's takeover (`executorStatus`) and the stuck-runs reading share; `now` and the
 * heartbeat are both the database's clock.
 */
export function isSilent(lastSeenAt: Date, now: Date, windowMs: number): boolean {
  return now.getTime() - lastSeenAt.getTime() > windowMs;
}

/** The same rule as a cutoff for SQL: silent at `now` ⇔ its last heartbeat is before this. */
export function silenceCutoff(now: Date, windowMs: number): Date {
  return new Date(now.getTime() - windowMs);
}
