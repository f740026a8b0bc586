/**
 * A drain's bound on a turn in flight (docs/rules.md, "Turns"; docs/operations.md, "Stopping"): a signal that aborts `boundMs` after
 * the controller's drain began (at once when it began longer ago). The turn's wait takes it:
 * past the bound the run is suspended where it stands and the drain completes; the runner
 * goes on and records the turn, and the next controller reattaches with that record.
 */
export function drainDeadline(drain: AbortSignal, boundMs: number): { signal: AbortSignal; dispose(): void } {
  const past = new AbortController();
  let timer: NodeJS.Timeout | null = null;
  const onDrain = () => {
    timer = setTimeout(() => past.abort(new Error(`the drain's bound of ${boundMs} ms passed`)), boundMs);
    timer.unref();
  };
  if (drain.aborted) onDrain();
  else drain.addEventListener("abort", onDrain, { once: true });
  return {
    signal: past.signal,
    dispose() {
      drain.removeEventListener("abort", onDrain);
      if (timer) clearTimeout(timer);
    },
  };
}

/** How long a drain waits for its runs to suspend after the turn bound (a runner's suspend, the writes). */
export const DRAIN_SUSPEND_GRACE_MS = 10_000;
