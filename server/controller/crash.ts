import type { ControllerContext } from "./context";

/**
 * Chaos hook (DOMAIN.md §5 K4): with RUNWARDEN_CRASH_AT naming this point, the controller
 * SIGKILLs itself here, exactly as a machine failure would, with nothing flushed.
 */
export function crashPoint(ctx: ControllerContext, point: string): void {
  if (!ctx.config.crashAt.has(point)) return;
  ctx.log.warn({ point }, "crash point reached: SIGKILL");
  process.kill(process.pid, "SIGKILL");
}
