import { bundledProgram, programArgs } from "../lib/bundle";

/**
 * The controller program, bundled (server/lib/bundle.ts): a controller starts without a
 * TypeScript loader, about half a second sooner, and a restarted controller reclaims what its
 * predecessor left that much sooner (`npm run bench`, docs/cli.md).
 */
export function controllerProgram(): string {
  return bundledProgram("scripts/controller.ts", "controller");
}

/** How to run the controller program. */
export function controllerArgs(): string[] {
  return programArgs(controllerProgram());
}
