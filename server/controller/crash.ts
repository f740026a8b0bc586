import fs from "node:fs";
import type { ControllerContext } from "./context";

/**
 * Chaos hook (docs/rules.md §5 K4): with RUNWARDEN_CRASH_AT naming this point, the controller
 * SIGKILLs itself here, exactly as a machine failure would, with nothing flushed. One plain
 * line goes out first (a synchronous write), so a wave can tell that its crash point was
 * reached, and for which run or lease.
 */
export function crashPoint(ctx: ControllerContext, point: string, subject: { runId?: string | null; leaseId?: string | null } = {}): void {
  if (!ctx.config.crashAt.has(point)) return;
  const about = [subject.runId ? `run=${subject.runId}` : "", subject.leaseId ? `lease=${subject.leaseId}` : ""].filter(Boolean).join(" ");
  fs.writeSync(1, `crash point reached: ${point}${about ? ` ${about}` : ""}\n`);
  process.kill(process.pid, "SIGKILL");
  // PID 1 of a PID namespace (a controller on "another host") is not killed by a signal of its
  // own: it would go on past its crash point. It ends here all the same, no handler run.
  (process as unknown as { reallyExit(code: number): never }).reallyExit(137);
}

/** Parses the line `crashPoint` writes. */
export function parseCrashLine(line: string): { point: string; runId: string | null; leaseId: string | null } | null {
  const m = /^crash point reached: (\S+)(?: run=(\S+))?(?: lease=(\S+))?/.exec(line);
  return m ? { point: m[1]!, runId: m[2] ?? null, leaseId: m[3] ?? null } : null;
}
