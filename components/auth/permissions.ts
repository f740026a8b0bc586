import { roleAllows, type Role } from "@/server/shared/roles";

/**
 * The role each guarded control needs, by the procedure it calls. The server enforces these
 * (server/trpc); the UI only explains them, so a test keeps this table equal to the router's.
 */
export const UI_NEEDS = {
  "runs.retry": "board",
  "plans.confirm": "operator",
  "runs.cancel": "board",
  "orphans.reclaim": "operator",
  "sweeps.run": "operator",
  "waves.import": "operator",
  "forecasts.take": "operator",
  "users.add": "admin",
} as const satisfies Record<string, Role>;

export type GuardedProcedure = keyof typeof UI_NEEDS;

/** Who to ask, by the least role that may do it. */
const ASK: Record<Role, string> = {
  viewer: "anyone signed in",
  board: "a board member or an operator",
  operator: "an operator",
  admin: "an admin",
};

/** "Your role (viewer) cannot Retry; ask a board member or an operator" */
export function refusalReason(role: Role, needs: Role, action: string): string {
  return `Your role (${role}) cannot ${action}; ask ${ASK[needs]}`;
}

export function permission(role: Role | null, procedure: GuardedProcedure, action: string): { allowed: boolean; reason: string | null } {
  const needs = UI_NEEDS[procedure];
  // Not known yet: the control stays usable and the server decides.
  if (!role || roleAllows(role, needs)) return { allowed: true, reason: null };
  return { allowed: false, reason: refusalReason(role, needs, action) };
}
