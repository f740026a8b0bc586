import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RUNNER_STATE_PATH } from "../providers/runner";
import { renderMetrics } from "../metrics";
import { submitRun } from "../runs/submit";
import type { RunForecast } from "../shared/forecast";
import { controllerProcesses } from "../test/controller-process";
import { startControllerHarness, waitFor, type ControllerHarness } from "../test/controller";
import { checkForecasts } from "./check";
import { storeForecast } from "./store";

/**
 * A stored forecast checked after a real restart (§2.12): real controller processes,
 * SIGKILLed and restarted, the real emulator and PostgreSQL. The new controller's tick
 * checks the forecast; nothing here calls the check for it.
 */

let h: ControllerHarness;
const { controller } = controllerProcesses(() => h);
const actor = { id: "test", role: "operator" };

beforeAll(async () => {
  h = await startControllerHarness();
});
afterAll(() => h.close());

const run = (id: string) => h.db.db.run.findUniqueOrThrow({ where: { id } });

/** A warm run mid-turn (turn 1 done, more to go) on a live controller. */
async function warmMidTurn(taskId: string) {
  const r = await submitRun(h.db.db, "inst-a", { companyId: "co-1", taskId, agent: "a", provider: "claude", sandboxMode: "warm", turns: 3 }, actor);
  const a = await controller({ RUNWARDEN_TURN_MS: "1500" });
  await waitFor("the first turn", async () => ((await run(r.id)).turnsDone >= 1 ? true : null));
  return { r, a };
}

/** The prediction the forecast makes of such a run: it continues by reattaching to its runner. */
async function storedReattachForecast(runId: string): Promise<string> {
  const x = await run(runId);
  const prediction: RunForecast = {
    runId,
    companyId: x.companyId,
    taskId: x.taskId,
    status: "running",
    phase: x.phase,
    executorBootId: x.executorBootId,
    executorEpoch: x.executorEpoch,
    prediction: "continues",
    path: "reattach",
    code: null,
    restsIn: null,
    owner: null,
    canRetry: null,
    reason: "its runner survives on the claimed lease",
    proofs: [{ kind: "lease_binding", verdict: "admitted", code: null, checks: [{ name: "lease_matches", ok: true }] }],
    evidence: [{ kind: "lease_binding" }],
    readError: null,
  };
  const stored = await storeForecast(h.db.db, { durationMs: 12, runs: [prediction] }, { instanceId: "inst-a", actor, source: "api", scope: { all: true } });
  return stored.id;
}

async function checked(forecastId: string, runId: string) {
  return waitFor("the forecast run to be checked", async () => {
    const row = await h.db.db.forecastRun.findUniqueOrThrow({ where: { forecastId_runId: { forecastId, runId } } });
    return row.outcome ? row : null;
  }, 60_000);
}

describe("a stored forecast checked after a real SIGKILL and restart", () => {
  it("a warm run mid-turn forecast to reattach: it reattaches, continues without Retry, and the forecast held", async () => {
    const { r, a } = await warmMidTurn("fc-held");
    const forecastId = await storedReattachForecast(r.id);
    a.kill("SIGKILL");
    await a.exited;
    // No restart yet: nothing to check.
    expect(await checkForecasts(h.db.db, "inst-a")).toEqual([]);
    await controller();
    const row = await checked(forecastId, r.id);
    expect(row.outcome).toBe("held");
    expect(row.actual).toMatchObject({ outcome: "held", differences: [], actual: { prediction: "continues", path: "reattach", decidedBy: "runner_resume:reattach" } });
    const done = await waitFor("the run to finish", async () => ((await run(r.id)).status === "succeeded" ? run(r.id) : null), 60_000);
    expect(done.turnsDone).toBe(3);
    expect(await h.db.db.run.count({ where: { previousRunId: r.id } })).toBe(0);
    expect(await h.db.db.alertEvent.count({ where: { dedupeKey: `forecast.missed:${forecastId}:${r.id}` } })).toBe(0);
    // Checked once: a second pass finds nothing left.
    expect(await checkForecasts(h.db.db, "inst-a")).toEqual([]);
    const audit = await h.db.db.auditEntry.findFirstOrThrow({ where: { action: "forecast.take", targetId: forecastId } });
    expect(audit).toMatchObject({ actor: "test", outcome: "ok" });
  }, 120_000);

  it("a forecast made stale (the runner's directory changed before the restart) differed: counted in metrics, raised as forecast.missed", async () => {
    const { r, a } = await warmMidTurn("fc-differed");
    const forecastId = await storedReattachForecast(r.id);
    a.kill("SIGKILL");
    await a.exited;
    // The world changes after the forecast: the runner's state now says it works elsewhere.
    const lease = await h.db.db.environmentLease.findFirstOrThrow({ where: { runId: r.id, status: "active" } });
    const home = (await h.emu.provider({ instanceId: "inst-a" }).homeDir(lease.providerLeaseId!))!;
    const stateFile = path.join(home, RUNNER_STATE_PATH);
    const state = JSON.parse(fs.readFileSync(stateFile, "utf8")) as Record<string, unknown>;
    fs.writeFileSync(stateFile, JSON.stringify({ ...state, workDir: "/somewhere/else/work" }));
    await controller();
    const row = await checked(forecastId, r.id);
    expect(row.outcome).toBe("differed");
    expect(row.actual).toMatchObject({
      outcome: "differed",
      actual: { prediction: "ends", code: "native_remote_recovery_lease_mismatch", restingCode: "native_continuation_requires_reconciliation", canRetry: true, decidedBy: "lease_binding:refused" },
      differences: [{ field: "prediction", forecast: "continues", actual: "ends" }],
    });
    const event = await h.db.db.alertEvent.findFirstOrThrow({ where: { type: "forecast.missed", dedupeKey: `forecast.missed:${forecastId}:${r.id}` } });
    expect((event.payload as { data: { runId: string; forecast: string; actual: string } }).data).toMatchObject({ runId: r.id, forecast: "continues (reattach)", actual: "ends (native_remote_recovery_lease_mismatch)" });
    const { body } = await renderMetrics(h.db.db);
    expect(body).toMatch(/^runwarden_forecast_missed_total 1$/m);
    expect(body).toMatch(/^runwarden_forecast_runs_checked\{outcome="held"\} 1$/m);
  }, 120_000);
});
