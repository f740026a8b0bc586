import type { CompanyScope } from "../shared/roles";
import type { Forecast } from "../shared/forecast";
import type { ControllerContext } from "./context";

/** The restart forecast's shell (§2.12): gathers read-only evidence, asks `engine/forecast.ts`. Stores nothing. */
export async function takeForecast(ctx: ControllerContext, scope: CompanyScope, options: { runIds?: string[]; onProgress?: (done: number, total: number) => void } = {}): Promise<Forecast> {
  void ctx;
  void scope;
  void options;
  throw new Error("takeForecast: not implemented yet");
}
