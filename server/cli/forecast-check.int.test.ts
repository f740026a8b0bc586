import { describe, expect, it } from "vitest";
import { addUser } from "../auth/users";
import { inProcessCli } from "../test/cli";
import { withTestDatabase } from "../test/context";

/**
 * `runwarden forecast` stores what it takes, and `--check` compares each stored forecast run
 * with the restart that followed (docs/rules.md §2.12): exit 4 when any differed. The restarts
 * here are written as a restarted controller writes them (its event, its proofs, the run's
 * epoch past the forecast's); real restarts are in server/forecasts/check.int.test.ts.
 */

const t = withTestDatabase();
const cli = inProcessCli(() => t.current.db);

/** A warm run past session.open with no sandbox: forecast `ends` with native_continuation_requires_reconciliation. */
async function stranded(task: string): Promise<string> {
  const r = await cli("run", "submit", "--company", "co-a", "--task", task, "--agent", "a", "--json");
  expect(r.code).toBe(0);
  const id = (JSON.parse(r.out) as { id: string }).id;
  await t.current.db.run.update({ where: { id }, data: { status: "running", phase: "session_open", turnsDone: 1, executorEpoch: 1, executorBootId: "boot-a" } });
  return id;
}

/** What a controller restarted after the forecast leaves: the claim (epoch + 1), `recovery_started`, its route proof, and the run where the route put it. */
async function restarted(runId: string, route: { verdict: string; code: string | null }) {
  const db = t.current.db;
  const ended = route.verdict === "refused";
  await db.run.update({
    where: { id: runId },
    data: { executorEpoch: 2, executorBootId: "boot-b", ...(ended ? { status: "failed", failureCode: route.code, canRetry: true, owner: "board" } : { phase: "acquiring" }) },
  });
  await db.runEvent.create({ data: { runId, type: "recovery_started", bootId: "boot-b", data: { restartKind: "hard", executorWas: "exited:pid_gone" } } });
  await db.proof.create({ data: { runId, kind: "recovery_route", verdict: route.verdict, code: route.code, reason: "test", checks: [], evidence: {}, output: {}, evaluatedBy: "boot-b" } });
}

describe("runwarden forecast --check", () => {
  it("stores each forecast; 0 while nothing differed, 4 once a run's restart did something else; --json, --forecast", async () => {
    const held = await stranded("fc-check-held");
    const taken = await cli("forecast");
    expect(taken.code).toBe(0);
    const forecastId = /stored as forecast (\S+)/.exec(taken.out)?.[1];
    expect(forecastId).toBeDefined();
    expect(await t.current.db.forecast.findUniqueOrThrow({ where: { id: forecastId! } })).toMatchObject({ source: "cli", total: 1, ends: 1 });
    expect(await t.current.db.auditEntry.count({ where: { action: "forecast.take", targetId: forecastId! } })).toBe(1);

    // Nothing restarted yet.
    const none = await cli("forecast", "--check");
    expect(none.code).toBe(0);
    expect(none.out).toContain("0 held, 0 differed, 0 ended without a restart, 1 not restarted yet");

    await restarted(held, { verdict: "refused", code: "native_continuation_requires_reconciliation" });
    const ok = await cli("forecast", "--check");
    expect(ok.code).toBe(0);
    expect(ok.out).toContain(`${held}  forecast held: ends (native_continuation_requires_reconciliation)`);
    expect(ok.out).toContain("1 held, 0 differed");

    // A second forecast, then a restart that went on where it said the run ends.
    const other = await stranded("fc-check-differed");
    const second = /stored as forecast (\S+)/.exec((await cli("forecast", "--run", other)).out)?.[1];
    await restarted(other, { verdict: "restart_acquire", code: null });
    const missed = await cli("forecast", "--check");
    expect(missed.code).toBe(4);
    expect(missed.out).toContain(`${other}  DIFFERED: forecast ends (native_continuation_requires_reconciliation), actual continues (acquire_again) (prediction: ends -> continues)`);
    expect(missed.err).toBe("runwarden forecast: 1 forecast run differed from what the restart did\n");
    const json = await cli("forecast", "--check", "--json");
    expect(json.code).toBe(4);
    const parsed = JSON.parse(json.out) as { held: number; differed: number; forecasts: Array<{ id: string; runs: Array<{ runId: string; outcome: string }> }> };
    expect({ held: parsed.held, differed: parsed.differed }).toEqual({ held: 1, differed: 1 });
    expect(parsed.forecasts.find((f) => f.id === second)?.runs).toEqual([expect.objectContaining({ runId: other, outcome: "differed" })]);
    // One forecast alone: the held one passes.
    expect((await cli("forecast", "--check", "--forecast", forecastId!)).code).toBe(0);
    // The alert was raised once, however often the check ran.
    expect(await t.current.db.alertEvent.count({ where: { type: "forecast.missed" } })).toBe(1);
  });

  it("--as: an operator checks under their name; a board user is refused and audited", async () => {
    const admin = { id: "t", role: "admin" };
    await addUser(t.current.db, { email: "op@example.com", role: "operator", companies: ["co-a"] }, admin, { all: true });
    await addUser(t.current.db, { email: "bo@example.com", role: "board", companies: ["*"] }, admin, { all: true });
    expect((await cli("forecast", "--check", "--as", "bo@example.com")).code).toBe(1);
    // Checked (0, or 4 for a run an earlier test made differ), not refused (1).
    expect([0, 4]).toContain((await cli("forecast", "--check", "--as", "op@example.com")).code);
    const entries = await t.current.db.auditEntry.findMany({ where: { action: "forecast.check" }, orderBy: { id: "desc" }, take: 2 });
    expect(entries.map((e) => [e.actor, e.outcome])).toEqual([
      ["op@example.com", "ok"],
      [expect.stringMatching(/ as bo@example\.com$/), "refused"],
    ]);
  });

  it("bad usage is exit 2", async () => {
    expect((await cli("forecast", "--check", "--forecast", "not-a-uuid")).code).toBe(2);
  });
});
