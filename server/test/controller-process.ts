import { FAST_CONTROLLER_ENV, launchController, type ControllerProcessHandle, type LaunchOptions } from "../controller/launch";

export type { ControllerProcessHandle };

/** Real controller processes for tests: the product's launcher with the fast timings underneath. */
export function spawnController(env: Record<string, string | undefined>, options: LaunchOptions = {}): ControllerProcessHandle {
  return launchController({ ...FAST_CONTROLLER_ENV, ...env }, options);
}
