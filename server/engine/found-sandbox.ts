import type { SandboxOwnershipResult } from "./verdicts";

/**
 * A create that got no answer, then found by its exact creation name: may the run take that
 * sandbox? Only when `sandbox_ownership` proved it the intent's and it is up or on its way up
 * (toolbox calls wait for it). Anything else — stopped, erroring, being destroyed, not provably
 * ours — is left to the creation-intent sweep, which reclaims it by its intent.
 */
export const TAKEABLE_SANDBOX_STATES = ["started", "creating", "starting", "pulling_snapshot", "pending_build", "building_snapshot"] as const;

export function isTakeableFoundSandbox(ownership: SandboxOwnershipResult["verdict"], state: string): boolean {
  return ownership === "owned" && (TAKEABLE_SANDBOX_STATES as readonly string[]).includes(state);
}
