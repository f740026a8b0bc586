import { afterEach } from "vitest";
import type { ControllerHarness } from "./controller";
import { tempDirs } from "./temp";
import { FAST_CONTROLLER_ENV, launchController, type ControllerProcessHandle, type LaunchOptions } from "../controller/launch";

export type { ControllerProcessHandle };

/** Real controller processes for tests: the product's launcher with the fast timings underneath. */
export function spawnController(env: Record<string, string | undefined>, options: LaunchOptions = {}): ControllerProcessHandle {
  return launchController({ ...FAST_CONTROLLER_ENV, ...env }, options);
}

/**
 * A test file's controllers on its harness: each killed after its test, the homes made for them
 * removed after the file. Call at a file's top level: it registers the hooks.
 */
export function controllerProcesses(harness: () => ControllerHarness, defaults: Record<string, string> = { RUNWARDEN_INSTANCE_ID: "inst-a" }) {
  const live: ControllerProcessHandle[] = [];
  const home = tempDirs("rw-ctl-home-");
  afterEach(async () => {
    for (const p of live.splice(0)) {
      p.kill("SIGKILL");
      await p.exited;
    }
  });
  /** A controller on the harness's database and emulator, ready; a home of its own unless `env` names one. */
  const controller = async (env: Record<string, string> = {}): Promise<ControllerProcessHandle> => {
    const h = harness();
    const p = spawnController({ DATABASE_URL: h.db.url, EMULATOR_URL: h.emu.emulator.url, ...defaults, RUNWARDEN_CONTROLLER_HOME: env.RUNWARDEN_CONTROLLER_HOME ?? home(), ...env });
    live.push(p);
    await p.ready;
    return p;
  };
  return { controller, home, live };
}
