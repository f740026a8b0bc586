import { describe, expect, it } from "vitest";
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

  it("bad usage is exit 2", async () => {
    expect((await cli("forecast", "--fail-on", "explodes")).code).toBe(2);
    expect((await cli("forecast", "--fail-on", "")).code).toBe(2);
    expect((await cli("forecast", "--lanes", "0")).code).toBe(2);
    expect((await cli("forecast", "--run", "not-a-uuid")).code).toBe(2);
    expect((await cli("forecast", "--no-such-flag")).code).toBe(2);
  });
});
