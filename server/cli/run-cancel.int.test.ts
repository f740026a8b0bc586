import os from "node:os";
import { describe, expect, it } from "vitest";
import { addUser } from "../auth/users";
import { scopeOf } from "../shared/roles";
import { inProcessCli } from "../test/cli";
import { withTestDatabase } from "../test/context";

/**
 * `runwarden run cancel` in-process against a real database (docs/rules.md §2.11): the same
 * service as the run page's Cancel, audited; an ended run is refused with exit 1 and left
 * alone; `--as` applies the person's role and companies. (The teardown of a live run's sandbox
 * is the service's, shown against a real controller in server/controller/cancel.int.test.ts.)
 */

const t = withTestDatabase();
const MACHINE = `cli:${os.userInfo().username}`;

const cli = inProcessCli(() => t.current.db);

async function submitted(task: string, company = "co-a"): Promise<string> {
  const r = await cli("run", "submit", "--company", company, "--task", task, "--agent", "a", "--json");
  expect(r.code).toBe(0);
  return (JSON.parse(r.out) as { id: string }).id;
}

describe("runwarden run cancel", () => {
  it("cancels a queued run with a reason, audited as the CLI actor; a second cancel is refused (exit 1), the run unchanged", async () => {
    const id = await submitted("cli-cancel");
    const first = await cli("run", "cancel", id, "--reason", "submitted twice");
    expect(first).toEqual({ code: 0, out: `cancelled run ${id}\n`, err: "" });
    const run = await t.current.db.run.findUniqueOrThrow({ where: { id } });
    expect(run).toMatchObject({ status: "cancelled", cancelledBy: MACHINE, cancelReason: "submitted twice", executorEpoch: 1 });
    const entries = await t.current.db.auditEntry.findMany({ where: { action: "run.cancel", targetId: id } });
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ actor: MACHINE, role: "operator", outcome: "ok", input: { reason: "submitted twice" } });

    const again = await cli("run", "cancel", id, "--json");
    expect(again.code).toBe(1);
    expect(JSON.parse(again.out)).toEqual({ result: "refused", runId: id, reason: "already_cancelled", refusal: `This run was already cancelled by ${MACHINE}: submitted twice.` });
    expect(again.err).toBe(`runwarden run: This run was already cancelled by ${MACHINE}: submitted twice.\n`);
    expect(await t.current.db.run.findUniqueOrThrow({ where: { id } })).toEqual(run);
    expect((await t.current.db.auditEntry.findMany({ where: { action: "run.cancel", targetId: id } })).map((e) => e.outcome).sort()).toEqual(["ok", "refused"]);
  });

  it("--json prints the outcome a script reads", async () => {
    const id = await submitted("cli-cancel-json");
    const r = await cli("run", "cancel", id, "--json");
    expect(r.code).toBe(0);
    expect(JSON.parse(r.out)).toEqual({ result: "cancelled", runId: id, leases: [] });
  });

  it("a malformed id is refused with exit 2 and audited; an unknown one is exit 1", async () => {
    const bad = await cli("run", "cancel", "not-a-uuid");
    expect(bad.code).toBe(2);
    expect(await t.current.db.auditEntry.findFirstOrThrow({ where: { action: "run.cancel" }, orderBy: { id: "desc" } })).toMatchObject({ actor: MACHINE, outcome: "refused", input: { runId: "not-a-uuid" } });
    const unknown = await cli("run", "cancel", "00000000-0000-4000-8000-000000000000");
    expect(unknown.code).toBe(1);
    expect(unknown.err).toContain("does not exist");
  });

  it("--as a board person: their companies only (another company's run does not exist for them); a viewer may not cancel", async () => {
    const admin = { id: "t", role: "admin" };
    await addUser(t.current.db, { email: "bo@example.com", role: "board", companies: ["co-a"], password: "a long password" }, admin, scopeOf(["*"]));
    await addUser(t.current.db, { email: "vi@example.com", role: "viewer", companies: ["co-a"], password: "a long password" }, admin, scopeOf(["*"]));
    const theirs = await submitted("cli-cancel-as");
    const other = await submitted("cli-cancel-as-other", "co-b");

    expect((await cli("run", "cancel", other, "--as", "bo@example.com")).err).toContain(`run ${other} does not exist`);
    const viewer = await cli("run", "cancel", theirs, "--as", "vi@example.com");
    expect(viewer.code).toBe(1);
    expect(viewer.err).toContain("run.cancel needs the board role");
    expect((await cli("run", "cancel", theirs, "--as", "bo@example.com", "--reason", "mine")).code).toBe(0);
    expect(await t.current.db.run.findUniqueOrThrow({ where: { id: theirs } })).toMatchObject({ status: "cancelled", cancelledBy: "bo@example.com" });
    expect(await t.current.db.run.findUniqueOrThrow({ where: { id: other } })).toMatchObject({ status: "queued" });
  });
});
