import { describe, expect, it } from "vitest";
import { appRouter } from "@/server/trpc/root";
import { permission, refusalReason, UI_NEEDS } from "./permissions";

const procedures = appRouter._def.procedures as unknown as Record<string, { _def: { meta?: { role?: string } } }>;

describe("the roles the UI explains", () => {
  it.each(Object.entries(UI_NEEDS))("%s needs %s, as the server enforces", (path, role) => {
    expect(procedures[path]?._def.meta?.role).toBe(role);
  });

  it("say who to ask, in words", () => {
    expect(refusalReason("viewer", "board", "Retry")).toBe("Your role (viewer) cannot Retry; ask a board member or an operator");
    expect(permission("board", "orphans.reclaim", "reclaim sandboxes")).toEqual({ allowed: false, reason: "Your role (board) cannot reclaim sandboxes; ask an operator" });
    expect(permission("operator", "users.add", "add people").reason).toBe("Your role (operator) cannot add people; ask an admin");
  });

  it("allow a role that may, and leave it to the server while the role is unknown", () => {
    expect(permission("board", "runs.retry", "Retry")).toEqual({ allowed: true, reason: null });
    expect(permission("admin", "sweeps.run", "run the sweeps")).toEqual({ allowed: true, reason: null });
    expect(permission(null, "runs.retry", "Retry")).toEqual({ allowed: true, reason: null });
  });
});
