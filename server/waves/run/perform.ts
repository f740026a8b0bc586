import { assertNever } from "../../engine";
import type { WaveAction, WaveObservation } from "../step";
import type { WaveContext } from "./context";
import type { WaveControllers } from "./controllers";
import type { KillEffects } from "./faults-at-kill";
import { checkDrain, findRunInFlight, watchTakeover } from "./observe";
import { clickRetry } from "./retry";
import { submitTask } from "./setup";

export interface WaveTools {
  controllers: WaveControllers;
  effects: KillEffects;
  forecast: (bootId: string | null, kind: string, build?: "current" | "next") => Promise<void>;
}

/**
 * Carries out one action `nextWaveStep` (server/waves/step.ts) decided; what it saw doing so
 * comes back as the next observation, or null when there is nothing to report. `judge` is the
 * loop's own (server/waves/runner.ts).
 */
export async function performAction(ctx: WaveContext, tools: WaveTools, a: Exclude<WaveAction, { type: "judge" }>): Promise<WaveObservation | null> {
  switch (a.type) {
    case "note":
      ctx.note(a.kind, a.detail);
      return null;
    case "submit":
      await submitTask(ctx, a.key);
      return null;
    case "start": {
      const controller = await tools.controllers.start(a);
      return { kind: "started", atMs: controller.readyAtMs, reason: a.reason, controller };
    }
    case "stop":
      await tools.controllers.stop(a.pid, a.signal);
      return null;
    case "stall":
      tools.controllers.stall(a.pid);
      return null;
    case "wake":
      tools.controllers.wake(a.pid);
      return null;
    case "land_faults":
      await tools.effects.beforeRestart();
      return null;
    case "forecast":
      await tools.forecast(a.bootId, a.kill, a.build ?? "current");
      return null;
    case "check_drain":
      return checkDrain(ctx, a.kill, a.runId, a.sinceMs);
    case "find_run_in_flight":
      return findRunInFlight(ctx, a.kill, a.bootId);
    case "watch_takeover":
      return watchTakeover(ctx, a.kill, a.runId, a.stalledBootId, a.sinceMs);
    case "retry":
      return clickRetry(ctx, a);
    default:
      return assertNever(a);
  }
}
