import type { Role, SessionUser } from "../shared/roles";

/** Signed-in people for tests that call procedures directly (no cookie involved). */
export function testUser(role: Role, companies: string[] | "all" = "all"): SessionUser {
  return {
    id: `u-${role}-${companies === "all" ? "all" : companies.join("-")}`,
    email: `${role}@test.local`,
    role,
    scope: companies === "all" ? { all: true } : { all: false, companies },
  };
}

export const TEST_ADMIN = testUser("admin");
