import type { Db } from "../server/db/client";

/**
 * The people the browser tests sign in as, made in the e2e database and signed in once each
 * by global-setup.ts. Specs run as the operator
 * unless they open a context with another one's storage state.
 */
export const BOARD_COMPANY = "co-e2e-a";

export const ACCOUNTS = {
  operator: { email: "operator@e2e.test", role: "operator", companies: ["*"], password: "e2e-operator-password" },
  viewer: { email: "viewer@e2e.test", role: "viewer", companies: ["*"], password: "e2e-viewer-password" },
  board: { email: "board-a@e2e.test", role: "board", companies: [BOARD_COMPANY], password: "e2e-board-a-password" },
  admin: { email: "admin@e2e.test", role: "admin", companies: ["*"], password: "e2e-admin-password" },
} as const;

export type Who = keyof typeof ACCOUNTS;

/** Cookies of a signed-in session (git-ignored, rewritten by every run). */
export function stateFile(who: Who): string {
  return `test-results/auth/${who}.json`;
}

/**
 * Sign-in backs off after 5 attempts per client, and every browser test is the same client.
 * The tests that sign in through the page start from a clean count in their throwaway
 * database (the limit itself is tested by the sign-in spec and server/auth/auth.int.test.ts).
 */
export async function resetSignInLimits(db: Db): Promise<void> {
  await db.rateLimit.deleteMany({ where: { key: { startsWith: "signin:" } } }); // per account, address, pair and device
}
