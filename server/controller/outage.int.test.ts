import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import { EmulatorAdminClient } from "../emulator/admin-client";
import { submitRun } from "../runs/submit";
import { createThrowawayDatabase, type ThrowawayDatabase } from "../test/emulator";
import { EmulatorChild, freePort } from "../test/emulator-child";
import { spawnController, type ControllerProcessHandle } from "../test/controller-process";
import { startControllerHarness, waitFor, type ControllerHarness } from "../test/controller";
import { outageEnv, outageLength, probeCapReachedMs, recoveryBudgetMs, type OutageSettings } from "../test/outage";
import { FAST_CONTROLLER_ENV } from "./launch";

/**
 * An outage is not the run's failure (docs/rules.md §2.8, the outage rule): the controller
 * executing runs is SIGKILLed mid-run and a new one starts while the provider is unavailable —
 * hung (SIGSTOP), answering 502s and 429s, or refusing connections (killed) — for a few times
 * (`server/test/outage.ts` `CROSSINGS`) each threshold below it must outlast. Without the rule (the
 * engine's `wait`, the tick's breaker gate) every run ends `native_recovery_attempts_exhausted`
 * within the recovery budget. With it none fails, none needs Retry, no attempt is counted, and
 * each turn's side effect happens exactly once.
 */

let h: ControllerHarness;
let database: ThrowawayDatabase;
let dataDir: string;
let scratch: string;
let port: number;
let emulator: EmulatorChild;
const controllers: ControllerProcessHandle[] = [];

/**
 * The thresholds, compressed by configuration: 2 attempts with a 100 ms back-off, a 2 s call
 * timeout (the defaults: 5, 2 s, 30 s — a budget of ~31 s for refused calls, ~3 min for hung
 * ones), probes from 100 ms up to a 500 ms cap (the defaults: 1 s up to 30 s). The call timeout
 * stays 2 s: below it a busy machine's slow toolbox call would read as an outage.
 */
const SETTINGS: OutageSettings = { callTimeoutMs: 2_000, maxAttempts: 2, backoffMs: 100, probeMs: 100, probeCapMs: 500 };
const OUTAGE_ENV = { ...outageEnv(SETTINGS), RUNWARDEN_TURN_MS: "50" };
/** FAST_CONTROLLER_ENV's session.open bound: a hung session.open crosses it too. */
const SESSION_OPEN_TIMEOUT_MS = Number(FAST_CONTROLLER_ENV.RUNWARDEN_SESSION_OPEN_TIMEOUT_MS);
/** The answering case's 429s ask for this long (Retry-After): the breaker probes no sooner. */
const RETRY_AFTER_S = 1;

/**
 * Hung: every call, every probe and session.open time out; the budget is that of calls that
 * time out (the largest threshold here: 2 × 2 s + 100 ms).
 */
const HUNG_MS = outageLength({
  recoveryBudget: recoveryBudgetMs(SETTINGS, SETTINGS.callTimeoutMs),
  probeCap: probeCapReachedMs(SETTINGS),
  sessionOpenTimeout: SESSION_OPEN_TIMEOUT_MS,
});
/** Answering 502s and 429s: every call fails at once; the 429s' Retry-After holds the probes back (the largest: the probe cap). */
const ANSWERING_MS = outageLength({ recoveryBudget: recoveryBudgetMs(SETTINGS, 0), probeCap: probeCapReachedMs(SETTINGS), retryAfter: RETRY_AFTER_S * 1000 });
/** Refused: every call fails at once (the largest: the probe cap, reached after 100 + 200 + 400 ms, then 500 ms). */
const REFUSED_MS = outageLength({ recoveryBudget: recoveryBudgetMs(SETTINGS, 0), probeCap: probeCapReachedMs(SETTINGS) });

beforeAll(async () => {
  h = await startControllerHarness();
  database = await createThrowawayDatabase(inject("adminUrl"), inject("runPrefix"), "outage");
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "rw-outage-emu-"));
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), "rw-outage-"));
  port = await freePort();
  emulator = new EmulatorChild({ port, adminUrl: inject("adminUrl"), database: database.name, dataDir });
  await emulator.start();
});

afterEach(async () => {
  for (const c of controllers.splice(0)) {
    c.kill("SIGKILL");
    await c.exited;
  }
});

afterAll(async () => {
  if (emulator?.running) {
    emulator.signal("SIGCONT");
    // The sandboxes' detached processes end with the test: reset kills them.
    await new EmulatorAdminClient(`http://127.0.0.1:${port}`).reset().catch(() => {});
  }
  await emulator?.kill();
  await database?.drop();
  await h?.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
  fs.rmSync(scratch, { recursive: true, force: true });
});

function controller(env: Record<string, string> = {}): ControllerProcessHandle {
  const c = spawnController({
    DATABASE_URL: h.db.url,
    EMULATOR_URL: `http://127.0.0.1:${port}`,
    RUNWARDEN_INSTANCE_ID: "inst-a",
    RUNWARDEN_CONTROLLER_HOME: path.join(scratch, "home"),
    ...OUTAGE_ENV,
    ...env,
  });
  controllers.push(c);
  return c;
}

async function submitRuns(prefix: string) {
  const runs = [];
  for (const [i, mode] of (["warm", "warm", "per_turn"] as const).entries()) {
    const marker = path.join(scratch, `${prefix}-${i}.txt`);
    const run = await submitRun(
      h.db.db,
      "inst-a",
      { companyId: "co-1", taskId: `${prefix}-${i}`, agent: "a", provider: "codex", sandboxMode: mode, turns: 4, agentCommand: `sleep 0.5; printf '%s\\n' "$RUNWARDEN_TURN" >> '${marker}'` },
      { id: "test", role: "operator" },
    );
    runs.push({ id: run.id, marker });
  }
  return runs;
}

/** Every run settled, each with its evidence of how it got there. */
async function settled(ids: string[]) {
  return waitFor(
    "every run to settle",
    async () => {
      const rows = await h.db.db.run.findMany({ where: { id: { in: ids } } });
      return rows.every((r) => r.status === "succeeded" || r.status === "failed") ? rows : null;
    },
    120_000,
  );
}

async function outageScenario(prefix: string, outage: { begin: () => Promise<void>; end: () => Promise<void> }, outageMs: number) {
  const runs = await submitRuns(prefix);
  const ids = runs.map((r) => r.id);
  const first = controller();
  await first.ready;
  await waitFor("every run past its first turn", async () => (await h.db.db.run.count({ where: { id: { in: ids }, turnsDone: { gte: 1 } } })) === runs.length, 60_000);
  first.kill("SIGKILL");
  await first.exited;

  await outage.begin();
  const second = controller();
  let bootId: string | undefined;
  // Ended however its checks turn out: the next scenario needs the provider back.
  try {
    await second.ready;
    bootId = /bootId=(\S+)/.exec(second.output.find((l) => l.startsWith("controller ready:")) ?? "")?.[1];
    // What the dashboard reads while it lasts: this controller's breaker open, runs waiting, none failed.
    const open = await waitFor(
      "the breaker open",
      async () => {
        const row = await h.db.db.controllerProcess.findUnique({ where: { bootId: bootId! } });
        return row?.providerUnavailableSince ? row : null;
      },
      30_000,
    );
    expect(open.providerLastError).toBeTruthy();
    const started = Date.now();
    let waiting = 0;
    while (Date.now() - started < outageMs) {
      const failed = await h.db.db.run.findMany({ where: { id: { in: ids }, status: "failed" }, select: { failureCode: true, failureDetail: true } });
      expect(failed).toEqual([]);
      waiting = Math.max(waiting, await h.db.db.run.count({ where: { id: { in: ids }, providerWaitSince: { not: null } } }));
      await new Promise((r) => setTimeout(r, 500));
    }
    expect(waiting).toBeGreaterThan(0);
  } finally {
    await outage.end();
  }

  const rows = await settled(ids);
  // A mismatch names each run's own account of itself: its errors, its detail, its proofs' verdicts.
  const story = await Promise.all(
    rows.map(async (r) => ({
      id: r.id,
      detail: r.failureDetail,
      errors: r.recoveryErrors,
      proofs: (await h.db.db.proof.findMany({ where: { runId: r.id }, orderBy: { evaluatedAt: "asc" }, select: { kind: true, verdict: true } })).map((p) => `${p.kind}:${p.verdict}`),
    })),
  );
  expect(
    rows.map((r) => ({ status: r.status, code: r.failureCode, turns: r.turnsDone, attempts: r.recoveryAttempts, waiting: r.providerWaitSince })),
    JSON.stringify(story),
  ).toEqual(runs.map(() => ({ status: "succeeded", code: null, turns: 4, attempts: 0, waiting: null })));
  // Each turn's side effect exactly once, after the provider came back as before it left.
  for (const r of runs) expect(fs.readFileSync(r.marker, "utf8").trim().split("\n")).toEqual(["1", "2", "3", "4"]);
  // No Retry: the runs are the ones submitted, none has a successor.
  expect(await h.db.db.run.count({ where: { previousRunId: { in: ids } } })).toBe(0);
  // The waits are proofs: every recovery_attempt judged the outage, none counted.
  const attempts = await h.db.db.proof.findMany({ where: { runId: { in: ids }, kind: "recovery_attempt" } });
  expect(attempts.length).toBeGreaterThan(0);
  expect(new Set(attempts.map((p) => p.verdict))).toEqual(new Set(["wait"]));
  expect(attempts.every((p) => (p.output as { counted?: boolean }).counted === false)).toBe(true);
  // The breaker's changes, in the controller's own log.
  expect(second.output.some((l) => l.includes("provider unavailable: runs wait for it"))).toBe(true);
  expect(second.output.some((l) => l.includes("provider back: runs go on"))).toBe(true);
  const after = await h.db.db.controllerProcess.findUniqueOrThrow({ where: { bootId: bootId! } });
  expect({ since: after.providerUnavailableSince, error: after.providerLastError }).toEqual({ since: null, error: null });
}

describe("a provider outage across a controller restart (docs/rules.md §2.8)", () => {
  it(`hung (SIGSTOP) for ${HUNG_MS / 1000} s: no run fails, no attempt is counted, every turn runs once`, { timeout: 240_000 }, async () => {
    await outageScenario(
      "hung",
      {
        begin: async () => emulator.signal("SIGSTOP"),
        end: async () => emulator.signal("SIGCONT"),
      },
      HUNG_MS,
    );
  });

  it(`answering 502s and 429s (the emulator's http_error and rate_limit faults on every call) for ${ANSWERING_MS / 1000} s: the same`, { timeout: 240_000 }, async () => {
    const admin = new EmulatorAdminClient(`http://127.0.0.1:${port}`);
    await outageScenario(
      "answering",
      {
        begin: async () => {
          await admin.setFault({ fault: { kind: "rate_limit", retryAfterSeconds: RETRY_AFTER_S }, times: 3 });
          await admin.setFault({ fault: { kind: "http_error", status: 502 } });
        },
        end: async () => {
          await admin.clearFaults();
        },
      },
      ANSWERING_MS,
    );
  });

  it(`refusing connections for ${REFUSED_MS / 1000} s (killed, then started again on its port): the same`, { timeout: 240_000 }, async () => {
    await outageScenario(
      "refused",
      {
        begin: () => emulator.kill(),
        end: async () => {
          await emulator.start();
        },
      },
      REFUSED_MS,
    );
  });
});
