import { describe, expect, it } from "vitest";
import { addUser } from "../auth/users";
import { forecastSchema } from "../shared/forecast";
import { inProcessCli } from "../test/cli";
import { withTestDatabase } from "../test/context";

/**
 * `runwarden forecast` in-process against a real database (docs/rules.md §2.12): its exit codes
 * as a deploy gate. The runs here need no provider read (queued; past session.open with no
 * sandbox); the forecasts that read sandboxes and runners are in
 * server/controller/forecast.int.test.ts, against real restarts.
 */

const t = withTestDatabase();
const cli = inProcessCli(() => t.current.db);

async function submitted(task: string, company = "co-a"): Promise<string> {
  const r = await cli("run", "submit", "--company", company, "--task", task, "--agent", "a", "--json");
  expect(r.code).toBe(0);
  return (JSON.parse(r.out) as { id: string }).id;
}

describe("runwarden forecast", () => {
  it("--fail-on: 0 when no run falls in the named classes, 3 when one does; --json prints the forecast", async () => {
    const queued = await submitted("fc-cli-queued");
    const clean = await cli("forecast", "--fail-on", "ends,operator");
    expect(clean.code).toBe(0);
    expect(clean.out).toContain(`${queued}  continues  claim_queued`);
    expect(clean.out).toContain("forecast of 1 live run(s)");

    // A warm run past session.open that holds no sandbox: the route refuses it (ends, Retry).
    const stranded = await submitted("fc-cli-stranded", "co-b");
    await t.current.db.run.update({ where: { id: stranded }, data: { status: "running", phase: "session_open", turnsDone: 1, executorEpoch: 1 } });
    const failing = await cli("forecast", "--fail-on", "ends,operator", "--verbose");
    expect(failing.code).toBe(3);
    expect(failing.out).toContain(`${stranded}  ends       native_continuation_requires_reconciliation (owner board, Retry)`);
    expect(failing.out).toContain("recovery_route: refused (native_continuation_requires_reconciliation)");
    expect(failing.out).toMatch(/FAIL sandbox_bound/);
    expect(failing.err).toBe("runwarden forecast: 1 run(s) forecast ends (--fail-on ends,operator)\n");

    // Only the named classes count; --company limits the runs.
    expect((await cli("forecast", "--fail-on", "operator")).code).toBe(0);
    expect((await cli("forecast", "--company", "co-a", "--fail-on", "ends")).code).toBe(0);
    expect((await cli("forecast", "--run", stranded, "--fail-on", "ends")).code).toBe(3);

    const json = await cli("forecast", "--json");
    expect(json.code).toBe(0);
    const f = forecastSchema.parse(JSON.parse(json.out));
    expect(f.counts).toEqual({ total: 2, continues: 1, ends: 1, operator: 0 });
    expect(f.runs.find((r) => r.runId === stranded)).toMatchObject({ prediction: "ends", code: "native_continuation_requires_reconciliation", canRetry: true, executorEpoch: 1 });
    // Nothing was claimed or written by the forecasts.
    expect(await t.current.db.run.findUniqueOrThrow({ where: { id: stranded } })).toMatchObject({ status: "running", executorEpoch: 1 });
    expect(await t.current.db.proof.count()).toBe(0);
  });

  it("--as: the person takes it, with their role and only their companies; a viewer or another company is refused and audited", async () => {
    const db = t.current.db;
    const admin = { id: "t", role: "admin" };
    await addUser(db, { email: "op-a@example.com", role: "operator", companies: ["co-a"] }, admin, { all: true });
    await addUser(db, { email: "vi@example.com", role: "viewer", companies: ["*"] }, admin, { all: true });
    const mine = await submitted("fc-as-a", "co-a");
    const theirs = await submitted("fc-as-b", "co-b");
    const taken = await cli("forecast", "--as", "op-a@example.com", "--json");
    expect(taken.code).toBe(0);
    const runs = forecastSchema.parse(JSON.parse(taken.out)).runs;
    expect(runs.map((r) => r.runId)).toContain(mine);
    expect(runs.map((r) => r.runId)).not.toContain(theirs);
    expect(new Set(runs.map((r) => r.companyId))).toEqual(new Set(["co-a"]));
    expect(await db.forecast.findFirstOrThrow({ orderBy: { createdAt: "desc" } })).toMatchObject({ takenBy: "op-a@example.com", takenRole: "operator", total: runs.length });
    const other = await cli("forecast", "--as", "op-a@example.com", "--company", "co-b");
    expect(other.code).toBe(1);
    expect(other.err).toContain("op-a@example.com does not act for company co-b");
    const viewer = await cli("forecast", "--as", "vi@example.com");
    expect(viewer.code).toBe(1);
    const refusals = await db.auditEntry.findMany({ where: { action: "forecast.take", outcome: "refused" }, orderBy: { id: "asc" } });
    expect(refusals.map((a) => a.actor)).toEqual(["op-a@example.com", expect.stringMatching(/ as vi@example\.com$/)]);
  });

  it("bad usage is exit 2", async () => {
    expect((await cli("forecast", "--fail-on", "explodes")).code).toBe(2);
    expect((await cli("forecast", "--fail-on", "")).code).toBe(2);
    expect((await cli("forecast", "--lanes", "0")).code).toBe(2);
    expect((await cli("forecast", "--run", "not-a-uuid")).code).toBe(2);
    expect((await cli("forecast", "--no-such-flag")).code).toBe(2);
  });
});
