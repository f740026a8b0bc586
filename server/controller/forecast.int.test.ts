import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DaytonaProvider } from "../providers/daytona";
import { buildLabels } from "../providers/labels";
import { readRunnerState, RUNNER_STATE_PATH } from "../providers/runner";
import { submitRun } from "../runs/submit";
import type { RunForecast } from "../shared/forecast";
import { controllerProcesses } from "../test/controller-process";
import { startControllerHarness, waitFor, type ControllerHarness } from "../test/controller";
import { takeForecast } from "./forecast";

/**
 * The restart forecast (docs/rules.md §2.12) against what a restart then really does: real
 * controller processes (SIGKILLed, then a new one), the real emulator and runner, PostgreSQL.
 * Each forecast is taken by a service context (not a controller), as the CLI takes it.
 */

let h: ControllerHarness;
const { controller, home } = controllerProcesses(() => h);
const actor = { id: "test", role: "board" };

beforeAll(async () => {
  h = await startControllerHarness();
});
afterAll(() => h.close());

const run = (id: string) => h.db.db.run.findUniqueOrThrow({ where: { id } });

async function settled(runId: string, timeoutMs = 60_000) {
  return waitFor(`run ${runId} to settle`, async () => {
    const r = await run(runId);
    return r.status === "succeeded" || r.status === "failed" ? r : null;
  }, timeoutMs);
}

async function forecastOf(runId: string): Promise<RunForecast> {
  const f = await takeForecast(h.service(), { all: true }, { runIds: [runId] });
  expect(f.runs).toHaveLength(1);
  return f.runs[0]!;
}

/** The verdicts recovery stored for the run, of the kinds a forecast walks, in order. */
async function actualSteps(runId: string): Promise<string[]> {
  const proofs = await h.db.db.proof.findMany({
    where: { runId, kind: { in: ["recovery_route", "stopped_sandbox", "lease_binding", "runner_resume", "bootstrap_restart", "recovery_attempt"] } },
    orderBy: [{ evaluatedAt: "asc" }, { id: "asc" }],
  });
  return proofs.map((p) => `${p.kind}:${p.verdict}`);
}

const steps = (f: RunForecast) => f.proofs.map((p) => `${p.kind}:${p.verdict}`);

/** A warm 3-turn run whose controller is SIGKILLed after its first turn, mid-way through the next. */
async function killedMidTurn(taskId: string) {
  const r = await submitRun(h.db.db, "inst-a", { companyId: "co-1", taskId, agent: "a", provider: "claude", sandboxMode: "warm", turns: 3 }, actor);
  const a = await controller({ RUNWARDEN_TURN_MS: "1500" });
  await waitFor("the first turn", async () => ((await run(r.id)).turnsDone >= 1 ? true : null));
  a.kill("SIGKILL");
  await a.exited;
  const lease = await h.db.db.environmentLease.findFirstOrThrow({ where: { runId: r.id, status: "active" } });
  return { r, sandboxId: lease.providerLeaseId! };
}

/** A per-turn run at session_open whose active lease is a `replacement` (§2.1 check 4), its executor gone. */
async function replacedLease(taskId: string) {
  await h.db.db.instance.upsert({ where: { id: "inst-a" }, create: { id: "inst-a", name: "a" }, update: {} });
  const r = await h.db.db.run.create({
    data: { instanceId: "inst-a", companyId: "co-1", taskId, agent: "a", provider: "codex", target: "remote", sandboxMode: "per_turn", status: "running", phase: "session_open", turnsDone: 1, runnerInstanceId: "ri-1", sessionId: "s-1" },
  });
  const sandbox = await h.emu.admin.plant({ name: `rw-fc-replaced-${r.id}`, labels: buildLabels({ instanceId: "inst-a", companyId: "co-1", runId: r.id }) });
  const lease = await h.db.db.environmentLease.create({
    data: { runId: r.id, instanceId: "inst-a", companyId: "co-1", provider: "emulator", providerLeaseId: sandbox.id, sandboxName: sandbox.name, remoteCwd: "/home/sandbox/work", acquisitionOutcome: "replacement", status: "active" },
  });
  await h.db.db.run.update({ where: { id: r.id }, data: { checkpoint: { providerLeaseId: sandbox.id, remoteCwd: "/home/sandbox/work", leaseId: lease.id } } });
  return { r, sandboxId: sandbox.id };
}

describe("a warm run mid-turn (K1)", () => {
  it("is forecast to continue by reattach, and after a SIGKILL and a new controller it does, without Retry: the forecast held", async () => {
    const { r } = await killedMidTurn("fc-k1-warm");
    const f = await forecastOf(r.id);
    expect(f).toMatchObject({ prediction: "continues", path: "reattach", code: null, readError: null });
    expect(steps(f)).toEqual(["recovery_route:recover_session", "stopped_sandbox:proceed", "lease_binding:admitted", "runner_resume:reattach"]);

    await controller();
    const done = await settled(r.id);
    expect({ status: done.status, code: done.failureCode }).toEqual({ status: "succeeded", code: null });
    expect(await h.db.db.run.count({ where: { previousRunId: r.id } })).toBe(0);
    // The restart's own proofs, verdict for verdict.
    expect((await actualSteps(r.id)).slice(0, f.proofs.length)).toEqual(steps(f));
    expect(await h.db.db.runEvent.count({ where: { runId: r.id, type: "runner_reattached" } })).toBe(1);
  }, 180_000);
});

describe("a run whose lease was replaced (§2.1)", () => {
  it("is forecast to end with native_runner_staged_attachment_recovery_unproven, and a restart ends it so", async () => {
    const { r } = await replacedLease("fc-replaced");
    const f = await forecastOf(r.id);
    expect(f).toMatchObject({
      prediction: "ends",
      path: null,
      code: "native_runner_staged_attachment_recovery_unproven",
      restsIn: "native_continuation_requires_reconciliation",
      owner: "board",
      canRetry: true,
    });
    expect(f.proofs.at(-1)!.checks.find((c) => c.name === "not_replacement")).toMatchObject({ ok: false, actual: "replacement" });

    await controller();
    const done = await settled(r.id);
    expect({ status: done.status, code: done.failureCode, canRetry: done.canRetry, owner: done.owner }).toEqual({ status: "failed", code: f.restsIn, canRetry: true, owner: "board" });
    const binding = await h.db.db.proof.findFirstOrThrow({ where: { runId: r.id, kind: "lease_binding" } });
    expect(binding.code).toBe(f.code);
    expect(await actualSteps(r.id)).toEqual(steps(f));
  }, 180_000);
});

describe("more routes, each checked against the real restart", () => {
  it("bootstrapping, killed after the runner started and before session.open: bootstrap_restart", async () => {
    const r = await submitRun(h.db.db, "inst-a", { companyId: "co-1", taskId: "fc-bootstrap", agent: "a", provider: "codex", sandboxMode: "warm", turns: 1 }, actor);
    const a = await controller({ RUNWARDEN_CRASH_AT: "after_runner_start" });
    expect((await a.exited).signal).toBe("SIGKILL");
    expect(await run(r.id)).toMatchObject({ phase: "bootstrapping" });
    const f = await forecastOf(r.id);
    expect(f).toMatchObject({ prediction: "continues", path: "bootstrap_restart" });

    await controller();
    expect((await settled(r.id)).status).toBe("succeeded");
    expect((await actualSteps(r.id)).slice(0, f.proofs.length)).toEqual(steps(f));
    expect(await h.db.db.run.count({ where: { previousRunId: r.id } })).toBe(0);
  }, 180_000);

  it("a per-turn sandbox left bound after its give-back stopped the runner: next_turn_sandbox, read through the runner", async () => {
    const marker = path.join(home(), "fc-give-back.turns");
    const r = await submitRun(
      h.db.db,
      "inst-a",
      { companyId: "co-1", taskId: "fc-give-back", agent: "a", provider: "codex", sandboxMode: "per_turn", turns: 3, agentCommand: `printf '%s\\n' "$RUNWARDEN_TURN" >> '${marker}'` },
      actor,
    );
    const a = await controller({ RUNWARDEN_CRASH_AT: "after_runner_stop", RUNWARDEN_SWEEP_INTERVAL_MS: "600000" });
    expect((await a.exited).signal).toBe("SIGKILL");
    const first = await h.db.db.environmentLease.findFirstOrThrow({ where: { runId: r.id, turn: 1 } });
    // The give-back's earlier order (stop, then release): the lease is still the run's active one.
    await h.db.db.environmentLease.update({ where: { id: first.id }, data: { status: "active", cleanupStatus: null } });
    const f = await forecastOf(r.id);
    expect(f).toMatchObject({ prediction: "continues", path: "next_turn_sandbox" });
    expect(steps(f)).toEqual(["recovery_route:read_runner", "stopped_sandbox:proceed", "recovery_route:next_turn_sandbox"]);

    await controller();
    expect((await settled(r.id)).status).toBe("succeeded");
    expect((await actualSteps(r.id)).slice(0, f.proofs.length)).toEqual(steps(f));
    expect(fs.readFileSync(marker, "utf8").trim().split("\n")).toEqual(["1", "2", "3"]);
  }, 180_000);

  it("a stopped sandbox: forecast start_sandbox and left stopped by the forecast; the restart starts it and the run goes on", async () => {
    const { r, sandboxId } = await killedMidTurn("fc-stopped");
    const provider = h.emu.provider({ instanceId: "inst-a" });
    await provider.stop(sandboxId);
    const f = await forecastOf(r.id);
    expect(f).toMatchObject({ prediction: "continues", path: "start_sandbox" });
    expect(steps(f)).toEqual(["recovery_route:recover_session", "stopped_sandbox:start_sandbox"]);
    expect((await provider.getById(sandboxId))?.state).toBe("stopped");

    await controller({ RUNWARDEN_RECOVERY_BACKOFF_MS: "200" });
    expect((await settled(r.id, 90_000)).status).toBe("succeeded");
    // The restart walked what the forecast walked: its decision to start the sandbox is a proof of its own, before the start.
    expect((await actualSteps(r.id)).slice(0, f.proofs.length)).toEqual(steps(f));
    expect(await h.db.db.runEvent.count({ where: { runId: r.id, type: "sandbox_start_attempted" } })).toBe(1);
    expect(await h.db.db.run.count({ where: { previousRunId: r.id } })).toBe(0);
  }, 180_000);
});

describe("the provider does not answer (§2.8)", () => {
  it("a run on a sandbox is forecast to wait for its provider (a read and the probe after it both fail), not to end", async () => {
    const { r } = await replacedLease("fc-outage");
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as net.AddressInfo;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    const ctx = { ...h.service(), provider: new DaytonaProvider({ apiUrl: `http://127.0.0.1:${port}`, apiKey: "k", timeoutMs: 500, instanceId: "inst-a" }) };
    const f = await takeForecast(ctx, { all: true }, { runIds: [r.id] });
    expect(f.runs[0]).toMatchObject({ prediction: "continues", path: "wait_for_provider" });
    expect(f.runs[0]!.readError).toBeTruthy();
    expect(f.runs[0]!.proofs.at(-1)).toMatchObject({ kind: "recovery_attempt", verdict: "wait" });
    // Left for the next test's forecast: ended here by hand, as no controller runs.
    await h.db.db.run.update({ where: { id: r.id }, data: { status: "failed" } });
  }, 60_000);
});

/** Every row a forecast could touch, as text (the order fixed by each row's own text). */
async function rows(): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = {};
  for (const table of ["runs", "environment_leases", "run_events", "proofs", "recovery_claims", "sandbox_creation_intents", "controller_processes", "audit_entries", "forecasts", "forecast_runs"]) {
    const found = await h.db.db.$queryRawUnsafe<{ row: string }[]>(`SELECT to_jsonb(t)::text AS row FROM ${table} t ORDER BY 1`);
    out[table] = found.map((r) => r.row);
  }
  return out;
}

describe("a forecast changes nothing", () => {
  it("rows, the runner state file, the runner process, the sandboxes and every epoch are the same before and after", async () => {
    const { r: warm, sandboxId } = await killedMidTurn("fc-nothing-warm");
    const { r: replaced } = await replacedLease("fc-nothing-replaced");
    const queued = await submitRun(h.db.db, "inst-a", { companyId: "co-1", taskId: "fc-nothing-queued", agent: "a", provider: "codex", sandboxMode: "warm", turns: 1 }, actor);
    const provider = h.emu.provider({ instanceId: "inst-a" });
    // The killed controller's turn ends in the runner on its own: wait until the runner is idle.
    await waitFor("the runner to finish its turn", async () => ((await readRunnerState(provider, sandboxId))?.inFlight ? null : true));
    const sandboxes = async () => (await h.emu.admin.sandboxes()).map((s) => ({ id: s.id, state: s.state, labels: s.labels })).sort((a, b) => a.id.localeCompare(b.id));

    const before = { rows: await rows(), state: await provider.readFile(sandboxId, RUNNER_STATE_PATH), sandboxes: await sandboxes() };
    const f = await takeForecast(h.service(), { all: true });
    const after = { rows: await rows(), state: await provider.readFile(sandboxId, RUNNER_STATE_PATH), sandboxes: await sandboxes() };

    expect(Object.fromEntries(f.runs.filter((x) => [warm.id, replaced.id, queued.id].includes(x.runId)).map((x) => [x.runId, `${x.prediction}:${x.path ?? x.code}`]))).toEqual({
      [warm.id]: "continues:reattach",
      [replaced.id]: "ends:native_runner_staged_attachment_recovery_unproven",
      [queued.id]: "continues:claim_queued",
    });
    expect(before.state).not.toBeNull();
    expect(after.state).toBe(before.state);
    expect(after.sandboxes).toEqual(before.sandboxes);
    expect(after.rows).toEqual(before.rows);
    // The runner the killed controller left is still the same process, untouched.
    const parsed = JSON.parse(after.state!) as { process: { pid: number }; lifecycle: string };
    expect(() => process.kill(parsed.process.pid, 0)).not.toThrow();
    expect(f.runs.find((x) => x.runId === warm.id)!.executorEpoch).toBe((await run(warm.id)).executorEpoch);
  }, 180_000);
});

describe("a forecast keeps no sandbox awake (Daytona's auto-stop)", () => {
  it("forecasts taken every second leave the sandbox's last activity where the dead controller left it; the runner's work moves it", async () => {
    const { r, sandboxId } = await killedMidTurn("fc-activity");
    const provider = h.emu.provider({ instanceId: "inst-a" });
    await waitFor("the runner to finish its turn", async () => ((await readRunnerState(provider, sandboxId))?.inFlight ? null : true));
    // The killed controller's last long poll is answered on its own once the turn is recorded.
    await waitFor("the killed controller's toolbox calls to end", async () => h.emu.emulator.toolboxCallsInFlight(sandboxId) === 0);
    const lastActivity = async () => (await h.emu.admin.sandboxes()).find((s) => s.id === sandboxId)!.lastActivityAt;
    const idleSince = await lastActivity();

    // Each forecast reads the runner state, peeks at the runner process and reads §2.2's files.
    for (let i = 0; i < 3; i++) {
      if (i > 0) await new Promise((resolve) => setTimeout(resolve, 1_000));
      expect(await forecastOf(r.id)).toMatchObject({ prediction: "continues", path: "reattach", readError: null });
      expect({ forecast: i + 1, lastActivityAt: await lastActivity() }).toEqual({ forecast: i + 1, lastActivityAt: idleSince });
    }

    // What a restarted controller does next — reattach, then a turn — is activity.
    const runner = h.service().runner;
    const reattached = await runner.reattach(sandboxId);
    const afterReattach = await lastActivity();
    expect(Date.parse(afterReattach)).toBeGreaterThan(Date.parse(idleSince));
    await runner.turn(sandboxId, reattached.lastControllerCommandSeq + 1);
    expect(Date.parse(await lastActivity())).toBeGreaterThan(Date.parse(afterReattach));
  }, 120_000);
});
