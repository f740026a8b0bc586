import { TRPCError } from "@trpc/server";
import crypto from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROLES, roleAllows, type Role, type SessionUser } from "../shared/roles";
import type { ControllerContext } from "../controller/context";
import { startControllerHarness, type ControllerHarness } from "../test/controller";
import { testUser } from "../test/users";
import { appRouter, createCaller } from "./root";
import { createTRPCContext } from "./trpc";
import { servicesOf } from "../services";

/**
 * Who may call what, checked for every procedure the router has and every role. The
 * table below is the policy; a procedure missing from it (or declaring no role) fails
 * here, so a new procedure cannot be forgotten.
 */
const POLICY: Record<string, Role> = {
  "runs.countByStatus": "viewer",
  "runs.list": "viewer",
  "runs.count": "viewer",
  "runs.failureGroups": "viewer",
  "runs.facets": "viewer",
  "runs.stuck": "viewer",
  "runs.get": "viewer",
  "runs.evidence": "viewer",
  "runs.create": "operator",
  "runs.retry": "board",
  "runs.cancel": "board",
  "sweeps.run": "operator",
  "waves.list": "viewer",
  "waves.get": "viewer",
  "waves.compare": "viewer",
  "waves.import": "operator",
  "proofs.evaluate": "viewer",
  "intents.list": "viewer",
  "orphans.list": "viewer",
  "orphans.reclaim": "operator",
  "orphans.destroyUnrecorded": "operator",
  "users.list": "admin",
  "users.add": "admin",
  "users.update": "admin",
  "users.disable": "admin",
  "users.enable": "admin",
  "users.resetPassword": "admin",
  "audit.list": "viewer",
  "me.get": "viewer",
  "overview.get": "viewer",
  "live.token": "viewer",
  "plans.preview": "operator",
  "plans.confirm": "operator",
  "plans.get": "operator",
  "alerts.list": "admin",
  "alerts.create": "admin",
  "alerts.update": "admin",
  "alerts.setEnabled": "admin",
  "alerts.delete": "admin",
  "alerts.test": "admin",
  "alerts.deliveries": "admin",
  "forecasts.list": "viewer",
  "forecasts.get": "viewer",
  "forecasts.forRun": "viewer",
  "forecasts.take": "operator",
  "tokens.list": "admin",
  "tokens.create": "admin",
  "tokens.revoke": "admin",
};

let h: ControllerHarness;
let service: ControllerContext;
const procedures = Object.entries(appRouter._def.procedures as unknown as Record<string, { _def: { meta?: { role?: Role }; type: string } }>);

beforeAll(async () => {
  h = await startControllerHarness();
  service = h.service();
});
afterAll(() => h.close());

function call(user: SessionUser | null, path: string): Promise<unknown> {
  const caller = createCaller(() => createTRPCContext({ user, headers: new Headers(), db: h.db.db, services: servicesOf(service) }));
  const [ns, name] = path.split(".") as [string, string];
  const fn = (caller as unknown as Record<string, Record<string, (input: unknown) => Promise<unknown>>>)[ns]![name]!;
  // A deliberately invalid input: allowed callers get past authorization and stop at validation.
  return fn({ "not-a-field": crypto.randomUUID() });
}

async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return "OK";
  } catch (err) {
    return err instanceof TRPCError ? err.code : `THREW ${String(err)}`;
  }
}

describe("every procedure declares a role", () => {
  it("matches the policy table exactly", () => {
    const declared = Object.fromEntries(procedures.map(([path, p]) => [path, p._def.meta?.role ?? "(none)"]));
    expect(declared).toEqual(POLICY);
  });
});

describe.each(procedures.map(([path]) => path))("%s", (path) => {
  it("refuses anyone not signed in", async () => {
    expect(await codeOf(call(null, path))).toBe("UNAUTHORIZED");
  });

  it.each([...ROLES])("as %s: allowed or FORBIDDEN exactly as the policy says", async (role) => {
    const needs = POLICY[path]!;
    const code = await codeOf(call(testUser(role), path));
    if (roleAllows(role, needs)) expect(code).not.toMatch(/FORBIDDEN|UNAUTHORIZED/);
    else expect(code).toBe("FORBIDDEN");
  });
});

describe("refused attempts", () => {
  it("are audited, with secrets left out", async () => {
    const caller = createCaller(() => createTRPCContext({ user: testUser("viewer"), headers: new Headers(), db: h.db.db, services: servicesOf(service) }));
    await expect(caller.users.add({ email: "x@y.z", role: "admin", companies: ["*"], password: "hunter2hunter2" })).rejects.toThrow(/needs the admin role/);
    const entry = await h.db.db.auditEntry.findFirstOrThrow({ where: { action: "users.add", outcome: "refused" }, orderBy: { id: "desc" } });
    expect(entry.actor).toBe("viewer@test.local");
    expect(JSON.stringify(entry.input)).not.toContain("hunter2");
    expect(entry.input).toMatchObject({ password: "[redacted]" });
  });
});
