/**
 * How a long-running command of ours is told to stop (docs/operations.md, "Stopping"): SIGINT,
 * SIGTERM, SIGHUP (a closed terminal), and its launcher's exit — Linux re-parents an orphan, so
 * a changed parent pid means whoever started it (npm, a shell, a test runner) is gone. One
 * place for every command (`npm start`, `npm run controller`, `npm run emulator`, `npm test`),
 * so they all stop the same ways.
 *
 * One Ctrl-C typed into a terminal reaches a process twice: from the terminal (the whole
 * foreground group gets it) and from npm, which relays SIGINT and SIGTERM to its script. A signal
 * within `relayWindowMs` of the one before is that relay, not a second request. A second Ctrl-C
 * (SIGINT) after that is a person pressing it again: `forced`, "stop now". A repeated SIGTERM or
 * SIGHUP never is: process managers send SIGTERM once and then SIGKILL, and a launcher that
 * signals its whole group and then each part (systemd's default KillMode) must not cut a drain short.
 *
 * A closed standard output or error (`npm start | tee log` whose reader died, a closed terminal)
 * never kills the process mid-stop: a write that fails (EPIPE, EIO) is dropped. The lines are
 * lost; the stop is not.
 */

export type StopReason = NodeJS.Signals | "launcher exited";

export interface StopRequest {
  /** What asked: a signal's name, or the launcher's exit. */
  reason: StopReason;
  /** A sentence for the log ("SIGTERM", "its launcher (pid 12) exited"). */
  why: string;
  /** 1 for the first request, 2 for the next that is not a relay of it, … */
  count: number;
  /** A second Ctrl-C: the command should stop at once, not finish stopping in order. */
  forced: boolean;
}

export interface StopSignalsOptions {
  /** Watch the parent pid and treat a re-parenting as a request to stop (default true). */
  watchLauncher?: boolean;
  /** The launcher's pid, when it was handed over rather than read now (default: process.ppid). */
  launcherPid?: number;
  /** A signal this soon after the last counted one is its relay, not a new request. */
  relayWindowMs?: number;
  /** How often the launcher is checked. */
  launcherPollMs?: number;
}

export const STOP_SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP"] as const satisfies readonly NodeJS.Signals[];

/** Installs the handlers; returns a function that removes them. */
export function onStopRequest(handle: (request: StopRequest) => void, options: StopSignalsOptions = {}): () => void {
  const relayWindowMs = options.relayWindowMs ?? 1_000;
  let count = 0;
  let last = -Infinity;
  const request = (reason: StopReason, why: string) => {
    const now = performance.now();
    if (count > 0 && now - last < relayWindowMs) return;
    count += 1;
    last = now;
    handle({ reason, why, count, forced: count > 1 && reason === "SIGINT" });
  };
  const onSignal = (signal: NodeJS.Signals) => request(signal, signal);
  for (const signal of STOP_SIGNALS) process.on(signal, onSignal);
  // EPIPE from a pipe whose reader died, EIO from a terminal that was closed: either way nobody
  // reads this output any more, and a failed write must not end the process mid-stop.
  const ignoreClosedOutput = () => {};
  for (const stream of [process.stdout, process.stderr]) stream.on("error", ignoreClosedOutput);

  let timer: NodeJS.Timeout | null = null;
  if (options.watchLauncher !== false) {
    const launcher = options.launcherPid ?? process.ppid;
    timer = setInterval(() => {
      if (process.ppid === launcher) return;
      if (timer) clearInterval(timer);
      timer = null;
      // Already stopping: the launcher that asked may well be gone by now; that asks nothing new.
      if (count > 0) return;
      request("launcher exited", `its launcher (pid ${launcher}) exited`);
    }, options.launcherPollMs ?? 500);
    // Watching never keeps a process alive that has nothing else to do.
    timer.unref();
  }
  return () => {
    for (const signal of STOP_SIGNALS) process.off(signal, onSignal);
    for (const stream of [process.stdout, process.stderr]) stream.off("error", ignoreClosedOutput);
    if (timer) clearInterval(timer);
  };
}
