import crypto from "node:crypto";
import os from "node:os";
import { beforeAll, describe, expect, it } from "vitest";
import { addUser } from "../auth/users";
import { scopeOf } from "../shared/roles";
import { inProcessCli } from "../test/cli";
import { withTestDatabase } from "../test/context";

/**
 * `--as EMAIL` on `run retry` and `run submit` (docs/access.md, "People"): the person's role and
 * companies apply as on runs.retry (board) and runs.create (operator); a refusal is audited
 * with the person's email. Without `--as` the machine's operator acts (server/cli/run-cancel.int.test.ts,
 * server/cli/run-submit.int.test.ts).
 */

const t = withTestDatabase();
const cli = inProcessCli(() => t.current.db);
const MACHINE = `cli:${os.userInfo().username}`;
const CODE = "native_provider_startup_rejected";

async function failedRun(companyId: string, taskId: string): Promise<string> {
  const run = await t.current.db.run.create({
    data: { id: crypto.randomUUID(), instanceId: "inst-as", companyId, taskId, agent: "a", provider: "codex", target: "remote", sandboxMode: "warm", status: "failed", outcome: "terminal_failure", failureCode: CODE, owner: "board", canRetry: true },
  });
  return run.id;
}

beforeAll(async () => {
  const db = t.current.db;
  await db.instance.create({ data: { id: "inst-as", name: "as" } });
  const admin = { id: "t", role: "admin" };
  for (const [email, role] of [["bo@example.com", "board"], ["vi@example.com", "viewer"], ["op@example.com", "operator"]] as const) {
    await addUser(db, { email, role, companies: ["co-a"], password: "a long password" }, admin, scopeOf(["*"]));
  }
});

describe("runwarden run retry --as", () => {
  it("a board person in the run's company: exactly one successor, audited as them; another company's run does not exist for them", async () => {
    const db = t.current.db;
    const id = await failedRun("co-a", "as-retry");
    const first = await cli("run", "retry", id, "--as", "bo@example.com");
    expect([first.code, first.err]).toEqual([0, ""]);
    const successor = /^started run (\S+)\n$/.exec(first.out)?.[1];
    expect(successor).toBeDefined();
    expect(await cli("run", "retry", id, "--as", "bo@example.com")).toEqual({ code: 0, out: `already retried as run ${successor}\n`, err: "" });
    expect(await db.run.findMany({ where: { previousRunId: id }, select: { id: true } })).toEqual([{ id: successor }]);
    const entries = await db.auditEntry.findMany({ where: { action: "run.retry", targetId: id }, orderBy: { id: "asc" } });
    expect(entries.map((e) => [e.actor, e.role, e.outcome])).toEqual([
      ["bo@example.com", "board", "ok"],
      ["bo@example.com", "board", "ok"],
    ]);
    expect((await db.runEvent.findFirstOrThrow({ where: { runId: id, type: "retried" } })).data).toMatchObject({ successor, by: "bo@example.com" });

    const other = await failedRun("co-b", "as-retry-other");
    expect(await cli("run", "retry", other, "--as", "bo@example.com")).toEqual({ code: 1, out: "", err: `runwarden run: run ${other} does not exist\n` });
    expect(await db.run.count({ where: { previousRunId: other } })).toBe(0);
  });

  it("a viewer is refused (exit 1), nothing retried, the refusal audited with their email", async () => {
    const db = t.current.db;
    const id = await failedRun("co-a", "as-retry-viewer");
    const r = await cli("run", "retry", id, "--as", "vi@example.com");
    expect(r).toEqual({ code: 1, out: "", err: "runwarden run: vi@example.com is viewer; run.retry needs the board role\n" });
    expect(await db.run.count({ where: { previousRunId: id } })).toBe(0);
    const refused = await db.auditEntry.findFirstOrThrow({ where: { action: "run.retry", outcome: "refused" }, orderBy: { id: "desc" } });
    expect(refused).toMatchObject({ actor: `${MACHINE} as vi@example.com`, role: "viewer", detail: { reason: "vi@example.com is viewer; run.retry needs the board role" } });
  });

  it("a set needs the operator role: a board person's --dry-run is refused and audited", async () => {
    const r = await cli("run", "retry", "--failure-code", CODE, "--company", "co-a", "--dry-run", "--as", "bo@example.com");
    expect(r).toEqual({ code: 1, out: "", err: "runwarden run: bo@example.com is board; run.bulk_retry needs the operator role\n" });
    expect(await t.current.db.bulkPlan.count()).toBe(0);
    expect(await t.current.db.auditEntry.count({ where: { action: "run.bulk_retry", outcome: "refused", actor: `${MACHINE} as bo@example.com` } })).toBe(1);
  });
});

describe("runwarden run submit --as", () => {
  const submit = (company: string, task: string, as: string) => cli("run", "submit", "--company", company, "--task", task, "--agent", "a", "--as", as, "--json");

  it("an operator submits for their company, audited as them", async () => {
    const r = await submit("co-a", "as-submit", "op@example.com");
    expect([r.code, r.err]).toEqual([0, ""]);
    const { id } = JSON.parse(r.out) as { id: string };
    expect(await t.current.db.run.findUniqueOrThrow({ where: { id } })).toMatchObject({ companyId: "co-a", taskId: "as-submit", status: "queued" });
    expect(await t.current.db.auditEntry.findFirstOrThrow({ where: { action: "run.submit", targetId: id } })).toMatchObject({ actor: "op@example.com", role: "operator", outcome: "ok" });
  });

  it("another company, or a person below operator, is refused (exit 1), nothing queued, audited", async () => {
    const db = t.current.db;
    expect(await submit("co-b", "as-submit-other", "op@example.com")).toEqual({ code: 1, out: "", err: "runwarden run: you cannot submit runs for company co-b\n" });
    expect(await db.auditEntry.findFirstOrThrow({ where: { action: "run.submit", targetId: "as-submit-other" } })).toMatchObject({ actor: "op@example.com", outcome: "refused" });
    expect(await submit("co-a", "as-submit-board", "bo@example.com")).toEqual({ code: 1, out: "", err: "runwarden run: bo@example.com is board; run.submit needs the operator role\n" });
    expect(await db.auditEntry.count({ where: { action: "run.submit", outcome: "refused", actor: `${MACHINE} as bo@example.com` } })).toBe(1);
    expect(await submit("co-a", "as-submit-nobody", "nobody@example.com")).toMatchObject({ code: 1, err: "runwarden run: no person nobody@example.com\n" });
    expect(await db.run.count({ where: { taskId: { in: ["as-submit-other", "as-submit-board", "as-submit-nobody"] } } })).toBe(0);
  });
});
