import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { createDb, type Db } from "../db/client";
import { openDatabase } from "../db/embedded";
import { migrate } from "../db/migrate";
import { databaseOf, withDatabase } from "../db/url";
import { emulatorApiKeys, emulatorUrl as configuredEmulatorUrl } from "../emulator/config";
import { EmulatorAdminClient } from "../emulator/admin-client";
import { startEmulator, type EmulatorHandle } from "../emulator/server";
import type { Env } from "../env";
import { evidenceIdentity } from "../controller/context";
import { FAST_CONTROLLER_ENV, launchController, type ControllerProcessHandle } from "../controller/launch";
import { json } from "../controller/records";
import { exitedProcessIdentity } from "../process/exited";
import { DaytonaProvider } from "../providers/daytona";
import { buildLabels, creationName, LABEL_KEYS } from "../providers/labels";
import { retryRun } from "../runs/retry";
import { submitRun } from "../runs/submit";
import { evaluateTask, type CollectedRun } from "./checks";
import { parseCrashLine } from "../controller/crash";
import { planWave, waveId, type WaveOptions, type WavePlan } from "./plan";
import { wavePassed, type FaultName, type FaultRecord, type KillRecord, type WaveEvent, type WaveReport } from "../shared/wave-report";
import { recordWaveStart, storeWaveReport } from "./store";
import { isUuid } from "../lib/ids";
import { markerCommand, readMarkers } from "./markers";
import pino from "pino";
import { controllerConfig } from "../controller/config";
import { LIVE_RUN_STATUSES } from "../engine";
import { checkForecasts } from "../forecasts/check";
import { storeForecast } from "../forecasts/store";
import { currentProcessIdentity } from "../process/identity";
import { providerFromEnv } from "../providers/from-env";
import { servicesOf } from "../services";

/**
 * Runs one restart-chaos wave (docs/rules.md §5) against the emulator with real controller
 * processes: plants decoys, submits the tasks with their faults, kills and restarts
 * controllers as the seeded plan says, clicks Retry (twice, like an impatient board user)
 * where the catalogue offers it, waits for everything to settle, then judges R1–R7 per
 * task and stores the report.
 */

export interface WaveRunOptions extends WaveOptions {
  env: Env;
  /** Give up waiting for the tasks to settle after this long. */
  timeoutMs: number;
  /** Retries the wave makes per task, like a board user. */
  retries: number;
  /** Test-only: a deliberately broken rule for the controllers (RUNWARDEN_TEST_BREAK_RULE). */
  breakRule?: Env["RUNWARDEN_TEST_BREAK_RULE"];
  /** Tests: each turn's length in the controllers (RUNWARDEN_TURN_MS; default 400 ms). */
  turnMs?: number;
  /** An emulator to use; otherwise the configured one if it answers, else one in-process. */
  emulatorUrl?: string;
  /** After the tasks settle, how long the sweeps get to finish the cleanup (default 20 s). */
  quiesceMs?: number;
  /** Aborting it stops the wave: controllers are killed and the wave is marked aborted. */
  signal?: AbortSignal;
  /** Tests: a hand-written plan instead of the seeded one. */
  plan?: WavePlan;
  onEvent?: (event: WaveEvent) => void;
  onProgress?: (progress: WaveProgress) => void;
}

export interface WaveProgress {
  id: string;
  elapsedMs: number;
  tasks: Array<{ key: string; status: string; turns: string; code: string | null }>;
  controller: number;
  /** Kills fired so far; of them, landed as planned (a K4 lands when its crash point is reached). */
  killsDone: number;
  killsLanded: number;
  killsPlanned: number;
}

const COMPANY = "co-wave";
/**
 * A K5 wave's silence window (RUNWARDEN_EXECUTOR_TIMEOUT_MS) for all its controllers: short
 * enough that a stall past it fits in a wave, long beside the 2 s heartbeat.
 */
const K5_SILENCE_MS = 6000;
const WAVE_TIMINGS: Record<string, string> = {
  ...FAST_CONTROLLER_ENV,
  RUNWARDEN_TURN_MS: "400",
  RUNWARDEN_RETRY_DELAY_MS: "1000",
  RUNWARDEN_SWEEP_INTERVAL_MS: "1000",
  RUNWARDEN_SETTLE_MS: "5000",
  RUNWARDEN_CREATE_TIMEOUT_MS: "1500",
  RUNWARDEN_SESSION_OPEN_TIMEOUT_MS: "1500",
  LOG_LEVEL: "warn",
};

export async function runWave(options: WaveRunOptions): Promise<WaveReport> {
  const startedAt = new Date();
  const id = waveId(startedAt, options.seed);
  const plan = options.plan ?? planWave(options);
  const instanceId = `wave-${id}`;
  const events: WaveEvent[] = [];
  const t0 = Date.now();
  const note = (kind: string, detail: string) => {
    const event = { atMs: Date.now() - t0, kind, detail };
    events.push(event);
    options.onEvent?.(event);
  };

  const database = await openDatabase({ env: options.env });
  await migrate(database.url);
  const db = createDb(database.url, { max: 6 });
  let emulator: EmulatorHandle | null = null;
  let controller: ControllerProcessHandle | null = null;
  /** Controllers the wave no longer targets but leaves running (a K5's woken one): stopped at the end. */
  const bystanders: LiveController[] = [];
  const home = path.resolve(options.env.RUNWARDEN_DATA_DIR, "waves", id);
  try {
    let emuUrl = options.emulatorUrl ?? configuredEmulatorUrl(options.env);
    if (!(await healthy(emuUrl))) {
      emulator = await startEmulator({ port: 0, databaseUrl: await emulatorDatabase(database.url, options.env) });
      emuUrl = emulator.url;
    }
    // Each turn appends its number to a file named by the run, outside the sandbox: the
    // wave counts them at its end (exactly once: docs/rules.md, "Turns"). Only where the sandboxes' commands
    // run on this host (an emulator here); elsewhere R3 says the markers were not read.
    const markers = emulator !== null || isLoopback(emuUrl) ? path.join(home, "markers") : null;
    if (markers) fs.mkdirSync(markers, { recursive: true });
    const emulatorKey = emulatorApiKeys(options.env)[0] ?? "emulator-key";
    const admin = new EmulatorAdminClient(emuUrl, emulatorKey);
    await recordWaveStart(db, { id, seed: options.seed, instanceId, companyId: COMPANY, plan, config: waveConfig(options), startedAt });
    note("wave", `started ${id}: ${plan.tasks.length} tasks, kills ${plan.kills.map((k) => k.kind).join(",") || "none"}, faults ${options.faults.join(",") || "none"}`);

    const decoys = await plantDecoys(db, admin, instanceId);
    note("decoys", `planted ${decoys.map((d) => d.kind).join(", ")}`);

    const runsByTask = new Map<string, string>();
    for (const task of plan.tasks) {
      const run = await submitRun(
        db,
        instanceId,
        {
          companyId: COMPANY,
          taskId: `${id}-${task.key}`,
          agent: task.agent,
          provider: task.provider,
          target: task.target,
          sandboxMode: task.sandboxMode,
          turns: task.turns,
          ...(markers ? { agentCommand: markerCommand(markers) } : {}),
        },
        { id: `wave:${id}`, role: "operator" },
        { waveId: id },
      );
      runsByTask.set(task.key, run.id);
      for (const fault of task.faults) {
        const rule = faultRule(fault, run.id);
        if (rule) await admin.setFault(rule);
      }
    }

    // ── controllers, kills and retries ──
    let generation = 0;
    const deaths = new Map<number, number>(); // pid → when it died (ms since t0)
    let live: LiveController | null = null;
    const silence = plan.kills.some((k) => k.kind === "K5") ? { RUNWARDEN_EXECUTOR_TIMEOUT_MS: String(K5_SILENCE_MS) } : {};
    const start: StartController = async (why, extra = {}, how = {}) => {
      generation += 1;
      const dir = path.join(home, how.freshHome ? `home-${generation}` : "home");
      fs.mkdirSync(dir, { recursive: true });
      const p = launchController({
        ...WAVE_TIMINGS,
        DATABASE_URL: database.url,
        // A wave's faults, decoys and forecasts are its emulator's: its controllers never reach a
        // real Daytona this process was given (npm start's first-boot wave beside a real provider).
        DAYTONA_API_URL: undefined,
        DAYTONA_API_KEY: undefined,
        EMULATOR_URL: emuUrl,
        EMULATOR_API_KEY: options.env.EMULATOR_API_KEY,
        RUNWARDEN_INSTANCE_ID: instanceId,
        RUNWARDEN_CONTROLLER_HOME: dir,
        RUNWARDEN_CONCURRENCY: String(plan.concurrency),
        RUNWARDEN_TEST_BREAK_RULE: options.breakRule,
        ...(options.turnMs !== undefined ? { RUNWARDEN_TURN_MS: String(options.turnMs) } : {}),
        ...silence,
        ...extra,
      }, { pidNamespace: how.pidNamespace ?? false });
      controller = p;
      void p.exited.then(() => deaths.set(p.pid, Date.now() - t0));
      await p.ready;
      const bootId = p.output.map((l) => /^controller ready: bootId=(\S+)/.exec(l)?.[1]).find(Boolean) ?? null;
      live = { handle: p, bootId, readyAtMs: Date.now() - t0, generation, killedByWave: false };
      note("controller", `#${generation} up (pid ${p.pid}${how.pidNamespace ? " in a PID namespace of its own" : ""}, ${why}${extra.RUNWARDEN_CRASH_AT ? `, crashes at ${extra.RUNWARDEN_CRASH_AT}` : ""})`);
      return live;
    };
    const stop = async (c: LiveController, signal: NodeJS.Signals) => {
      c.killedByWave = true;
      c.handle.kill(signal);
      await c.handle.exited;
    };

    const effects = new KillEffects(plan, admin, db, runsByTask, t0, note);
    // The restart forecast (docs/rules.md §2.12), read-only, against the wave's own instance and emulator.
    const { provider: fcProvider, runner: fcRunner, target: fcTarget } = providerFromEnv({ ...options.env, DAYTONA_API_URL: undefined, EMULATOR_URL: emuUrl, EMULATOR_API_KEY: emulatorKey }, { instanceId });
    const forecaster = servicesOf({
      db,
      provider: fcProvider,
      providerTarget: fcTarget,
      runner: fcRunner,
      identity: currentProcessIdentity(),
      config: controllerConfig(options.env, { instanceId }),
      log: pino({ name: "wave-forecast", level: "warn" }),
      drain: new AbortController(),
    });
    /** What a forecast depends on, per run: a run whose snapshot moved while it was taken was forecast in a state it no longer is in. */
    const snapshot = async (runIds: string[]) => {
      const rows = await db.run.findMany({
        where: { id: { in: runIds } },
        select: { id: true, status: true, phase: true, turnsDone: true, executorEpoch: true, checkpoint: true, leases: { where: { status: "active" }, select: { id: true } } },
      });
      return new Map(rows.map((r) => [r.id, JSON.stringify([r.status, r.phase, r.turnsDone, r.executorEpoch, r.checkpoint, r.leases.map((l) => l.id).sort()])]));
    };
    /**
     * At a kill: a forecast of the runs it interrupts (those its target executes), taken once
     * the target is stopped and before the restart, stored with the wave's id for R7. Kept: the runs in session that did not move while it
     * was taken (a per-turn run can pass a turn in that time: its forecast would be of a state
     * the kill never meets); taken again up to three times while some moved. A run still
     * acquiring or bootstrapping is not kept: its sandbox moves on (a runner starting) without
     * its row changing, so no snapshot can say the kill met the state that was forecast.
     */
    const forecastKill = async (target: LiveController, kind: string) => {
      if (!target.bootId) return;
      const runs = await db.run.findMany({ where: { waveId: id, executorBootId: target.bootId, status: { in: [...LIVE_RUN_STATUSES] } }, select: { id: true } });
      if (runs.length === 0) return;
      const runIds = runs.map((r) => r.id);
      try {
        for (let attempt = 1; ; attempt += 1) {
          const before = await snapshot(runIds);
          const forecast = await forecaster.takeForecast({ all: true }, { runIds });
          const after = await snapshot(runIds);
          const moved = forecast.runs.filter((r) => before.get(r.runId) !== after.get(r.runId)).map((r) => r.runId);
          if (moved.length > 0 && attempt < 3) continue;
          const settling = forecast.runs.filter((r) => !moved.includes(r.runId) && r.phase !== "session_open").map((r) => r.runId);
          const kept = forecast.runs.filter((r) => !moved.includes(r.runId) && !settling.includes(r.runId));
          const stored = await storeForecast(db, { durationMs: forecast.durationMs, runs: kept }, { instanceId, actor: { id: `wave:${id}`, role: "operator" }, source: "wave", scope: { all: true }, waveId: id });
          const count = (p: string) => kept.filter((r) => r.prediction === p).length;
          note(
            "forecast",
            `before ${kind}: ${count("continues")} continue, ${count("ends")} end, ${count("operator")} for an operator (forecast ${stored.id}, ${forecast.durationMs} ms${moved.length ? `; not kept, moved while forecast: ${moved.join(", ")}` : ""}${settling.length ? `; not kept, not yet in session: ${settling.join(", ")}` : ""})`,
          );
          return;
        }
      } catch (err) {
        note("forecast", `before ${kind}: not taken: ${err instanceof Error ? err.message : String(err)}`);
      }
    };
    await start("first");
    const records: KillRecord[] = plan.kills.map((k) => ({
      kind: k.kind,
      ...(k.crashAt ? { crashAt: k.crashAt } : {}),
      afterReadyMs: k.atMs,
      landed: false,
      firedAtMs: null,
      targetPid: null,
      interruptedRunId: null,
      crashPointAtMs: null,
      ...(k.kind === "K5" ? { takeoverAtMs: null, takeoverReason: null } : {}),
      restartPid: null,
      detail: "not fired",
    }));
    let next = 0; // index of the next kill to fire
    /** A K4 that fired: its armed controller has yet to reach the crash point. */
    let armed: KillRecord | null = null;
    const retried = new Map<string, number>();
    const deadline = Date.now() + options.timeoutMs;
    let settledSince: number | null = null;

    // A kill lands on work in flight on the controller it targets, never on an idle one: a run
    // in session, on the sandbox it holds (a per-turn run between turns, its sandbox given
    // back, has no session to interrupt).
    const runInFlight = async (target: LiveController) =>
      target.bootId
        ? await db.run.findFirst({
            where: {
              waveId: id,
              executorBootId: target.bootId,
              status: "running",
              phase: "session_open",
              OR: [{ target: "local" }, { leases: { some: { status: "active" } } }],
            },
            select: { id: true },
          })
        : null;

    for (;;) {
      if (options.signal?.aborted) throw new Error("the wave was stopped before it finished");
      const elapsed = Date.now() - t0;
      const current = live as LiveController | null;
      if (current && (current.handle.child.exitCode !== null || current.handle.child.signalCode !== null)) {
        const crash = current.handle.output.map(parseCrashLine).find((c) => c !== null) ?? null;
        if (armed && crash && !current.killedByWave) {
          // K4 landed: the armed controller died at its crash point, by its own SIGKILL.
          armed.landed = true;
          armed.crashPointAtMs = deaths.get(current.handle.pid) ?? elapsed;
          armed.interruptedRunId = crash.runId ?? (crash.leaseId ? await runOfLease(db, crash.leaseId) : null);
          armed.detail = `crash point ${crash.point} reached${crash.runId ? ` in run ${crash.runId}` : ""}${crash.leaseId ? ` in the teardown of lease ${crash.leaseId}` : ""}`;
          note("crash", `K4: controller pid ${current.handle.pid} reached its crash point ${crash.point}${crash.runId ? ` (run ${crash.runId})` : ""}`);
          const restarted = await start("after the K4 crash");
          armed.restartPid = restarted.handle.pid;
          armed = null;
        } else {
          if (armed) {
            armed.detail = `the armed controller exited (${current.handle.child.signalCode ?? current.handle.child.exitCode}) without reaching ${armed.crashAt}`;
            armed = null;
          }
          note("restart", `controller pid ${current.handle.pid} exited (${current.handle.child.signalCode ?? current.handle.child.exitCode}); starting another`);
          await start("after an exit");
        }
      }

      const states = await taskStates(db, id);
      const tasksDone = states.length === plan.tasks.length && states.every((s) => s.settled);
      const target = live as LiveController | null;
      if (armed && tasksDone && (await cleanupDone(db, instanceId))) {
        // Nothing left that could create or tear down a sandbox: the crash point cannot be reached.
        armed.detail = `crash point ${armed.crashAt} not reachable: every task had settled and nothing was left to create or tear down`;
        note("kill", `K4 did not land: ${armed.detail}`);
        armed = null;
      }
      const kill = records[next];
      if (!armed && kill && target && elapsed - target.readyAtMs >= kill.afterReadyMs) {
        const inFlight = await runInFlight(target);
        // An archive lands with the first kill on its run's sandbox: that kill waits until the run holds one (or is over).
        if (inFlight && (await effects.readyToLand())) {
          next += 1;
          kill.firedAtMs = elapsed;
          kill.targetPid = target.handle.pid;
          kill.interruptedRunId = inFlight.id;
          // The forecast of the target's runs, taken once it is stopped and before anything restarts
          // (a K5's other host is started before the stall: there, right after the SIGSTOP): what it
          // sees is what the restart meets — a drain's suspensions, a fault's archive included.
          let forecastTaken = false;
          const forecastOnce = async () => {
            if (forecastTaken) return;
            forecastTaken = true;
            await forecastKill(target, kill.kind);
          };
          // The faults that land with the first kill come between its stop and the next start.
          const startAfterEffects: StartController = async (...args) => {
            await effects.beforeRestart();
            if (kill.kind !== "K5") await forecastOnce();
            return start(...args);
          };
          const after = await performKill(kill, target, inFlight.id, { stop, start: startAfterEffects, note, db, t0, bystanders, runInFlight, afterStop: forecastOnce });
          kill.restartPid = after.handle.pid;
          if (kill.kind === "K4") {
            armed = kill;
            kill.interruptedRunId = null; // the run the crash interrupts is known when it happens
            kill.detail = `armed controller pid ${after.handle.pid} waits for ${kill.crashAt}`;
          } else if (kill.kind === "K5") {
            // performKill judged it: landed once the other host's controller took the run over.
          } else if (kill.kind === "K2") {
            const suspended = await db.runEvent.count({ where: { runId: inFlight.id, type: "suspended", at: { gte: new Date(t0 + elapsed) } } });
            kill.landed = suspended > 0;
            kill.detail = kill.landed ? `drained: run ${inFlight.id} suspended` : `the drain did not suspend run ${inFlight.id}`;
          } else {
            kill.landed = true;
            kill.detail = `interrupted run ${inFlight.id} in flight`;
          }
        }
      }
      // The task states above were read before these Retries: a Retry made now has a new run to wait for.
      const retriedNow = await retryWhereOffered(db, plan, runsByTask, retried, options.retries, id, note);

      options.onProgress?.({
        id,
        elapsedMs: elapsed,
        tasks: states.map((s) => ({ key: s.key, status: s.status, turns: s.turns, code: s.code })),
        controller: generation,
        killsDone: next,
        killsLanded: records.filter((r) => r.landed).length,
        killsPlanned: plan.kills.length,
      });
      const allSettled = retriedNow === 0 && states.length === plan.tasks.length && states.every((s) => s.settled && (s.status === "succeeded" || (retried.get(s.key) ?? 0) >= options.retries || !s.canRetry));
      if (allSettled && !armed) {
        settledSince ??= Date.now();
        // Let the sweeps finish the cleanup before judging (bounded).
        if ((await cleanupDone(db, instanceId)) || Date.now() - settledSince > (options.quiesceMs ?? 20_000)) break;
      } else {
        settledSince = null;
      }
      if (Date.now() > deadline) {
        note("timeout", `tasks did not settle within ${Math.round(options.timeoutMs / 1000)} s`);
        break;
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    for (const k of records.slice(next)) {
      k.detail = "never fired: every task settled before its target controller had work in flight";
      note("kill", `${k.kind} did not land: ${k.detail}`);
    }
    if (armed) armed.detail = `the wave ended before the armed controller reached ${armed.crashAt}`;
    const last = live as LiveController | null;
    if (last) await stop(last, "SIGTERM");
    for (const b of bystanders) await stop(b, "SIGTERM");

    // ── judge ──
    // The forecasts against the restarts (the controllers' ticks did most; the last one is stopped).
    await checkForecasts(db, instanceId, { limit: 10_000 });
    const forecastRuns = await db.forecastRun.findMany({
      where: { forecast: { waveId: id } },
      select: { forecastId: true, runId: true, prediction: true, path: true, code: true, outcome: true, actual: true },
    });
    const sandboxes = (await admin.sandboxes({ includeDestroyed: true })).filter((s) => s.labels[LABEL_KEYS.instance] === instanceId);
    const decoyState = new Map((await admin.sandboxes({ includeDestroyed: true })).map((s) => [s.id, s.state]));
    const decoyResults = decoys.map((d) => ({ id: d.id, kind: d.kind, intact: decoyState.get(d.id) !== undefined && decoyState.get(d.id) !== "destroyed" }));
    const decoyIds = new Set(decoys.map((d) => d.id));
    const tasks = [];
    for (const task of plan.tasks) {
      const runs = await collectRuns(db, `${id}-${task.key}`);
      const runIds = runs.map((r) => r.id);
      const proofs = await db.proof.findMany({ where: { runId: { in: runIds } }, select: { runId: true, kind: true, verdict: true, evidence: true } });
      const leases = await db.environmentLease.findMany({ where: { runId: { in: runIds } } });
      tasks.push(
        evaluateTask({
          key: task.key,
          taskId: `${id}-${task.key}`,
          runs,
          proofs: proofs.map((p) => ({ runId: p.runId!, kind: p.kind, verdict: p.verdict, evidence: p.evidence })),
          leases: leases.map((l) => ({ id: l.id, runId: l.runId, status: l.status, fencedUntil: l.fencedUntil?.toISOString() ?? null, providerLeaseId: l.providerLeaseId })),
          sandboxes: sandboxes.filter((s) => !decoyIds.has(s.id) && runIds.includes(s.labels[LABEL_KEYS.run] ?? "")),
          decoys: decoyResults,
          ...(markers ? { markers: Object.fromEntries(runIds.map((r) => [r, readMarkers(markers, r)])) } : {}),
          forecasts: forecastRuns
            .filter((f) => runIds.includes(f.runId))
            .map((f) => ({ forecastId: f.forecastId, runId: f.runId, prediction: f.prediction, path: f.path, code: f.code, outcome: f.outcome, differences: (f.actual as { differences?: unknown } | null)?.differences ?? null })),
        }),
      );
    }
    const orphanSandboxes = sandboxes
      .filter((s) => !decoyIds.has(s.id) && s.state !== "destroyed" && s.state !== "destroying")
      .map((s) => ({ id: s.id, name: s.name, state: s.state, run: s.labels[LABEL_KEYS.run] ?? null }));
    const reclaims = await reclaimTimes(db, instanceId, deaths, t0);
    const faults = await faultRecords(admin, plan, runsByTask, await effects.records([...runsByTask.values()]));
    for (const f of faults.filter((x) => !x.fired)) note("fault", `${f.task} ${f.fault} did not fire: ${f.detail}`);
    const report: WaveReport = {
      id,
      seed: options.seed,
      instanceId,
      companyId: COMPANY,
      startedAt: startedAt.toISOString(),
      finishedAt: new Date().toISOString(),
      plan,
      passed: wavePassed({ tasks, orphanSandboxes, kills: records, faults }),
      orphanSandboxes,
      reclaims,
      decoys: decoyResults,
      events,
      tasks,
      kills: records,
      faults,
    };
    await storeWaveReport(db, report, { config: waveConfig(options) });
    // The decoys were the wave's own; it takes them away again, by id.
    const cleaner = new DaytonaProvider({ apiUrl: emuUrl, apiKey: emulatorKey });
    for (const d of decoys) await cleaner.destroy(d.id).catch(() => {});
    return report;
  } catch (err) {
    await db.chaosWave.updateMany({ where: { id, status: "running" }, data: { status: "aborted", finishedAt: new Date(), summary: json({ error: err instanceof Error ? err.message : String(err) }) } }).catch(() => {});
    throw err;
  } finally {
    for (const c of [controller as ControllerProcessHandle | null, ...bystanders.map((b) => b.handle)]) {
      if (c && c.child.exitCode === null && c.child.signalCode === null) {
        c.kill("SIGCONT"); // a stalled one dies of SIGKILL anyway; its unshare then exits
        c.kill("SIGKILL");
        await c.exited;
      }
    }
    await emulator?.close();
    await db.$disconnect();
    await database.stop();
  }
}

/** What the wave was asked to do, as stored beside its plan. */
function waveConfig(o: WaveRunOptions) {
  return { tasks: o.tasks, kills: o.kills, faults: o.faults, concurrency: o.concurrency, retries: o.retries, timeoutMs: o.timeoutMs, breakRule: o.breakRule ?? null };
}

interface LiveController {
  handle: ControllerProcessHandle;
  bootId: string | null;
  /** When it was ready, on the wave's clock: the next kill's delay counts from here. */
  readyAtMs: number;
  generation: number;
  /** True once the wave itself signalled it (so its death is not a crash point). */
  killedByWave: boolean;
}

type StartController = (why: string, extra?: Record<string, string>, how?: { freshHome?: boolean; pidNamespace?: boolean }) => Promise<LiveController>;

interface KillTools {
  stop: (c: LiveController, s: NodeJS.Signals) => Promise<void>;
  start: StartController;
  note: (kind: string, detail: string) => void;
  db: Db;
  t0: number;
  bystanders: LiveController[];
  /** A run in session on this controller now, if any. */
  runInFlight: (target: LiveController) => Promise<{ id: string } | null>;
  /** K5: called once the target is stopped (the restart forecast of its runs, docs/rules.md §2.12). */
  afterStop?: () => Promise<void>;
}

/** Stops the target as the kill kind says and starts the controller that follows it. */
async function performKill(kill: KillRecord, current: LiveController, runId: string, tools: KillTools): Promise<LiveController> {
  const { stop, start, note } = tools;
  const pid = current.handle.pid;
  switch (kill.kind) {
    case "K1":
      await stop(current, "SIGKILL");
      note("kill", `K1: SIGKILL pid ${pid} with run ${runId} in flight`);
      return start("after K1");
    case "K2":
      await stop(current, "SIGTERM");
      note("kill", `K2: SIGTERM pid ${pid} with run ${runId} in flight, drained`);
      return start("after K2");
    case "K4":
      await stop(current, "SIGKILL");
      note("kill", `K4: SIGKILL pid ${pid} with run ${runId} in flight; the next controller dies at ${kill.crashAt}`);
      return start("K4 armed", { RUNWARDEN_CRASH_AT: kill.crashAt ?? "after_create" });
    case "K5":
      return stallPastSilence(kill, current, runId, tools);
    case "K15":
      await stop(current, "SIGKILL");
      note("kill", `K15: SIGKILL pid ${pid} with run ${runId} in flight; restart with a fresh home`);
      return start("after K15, fresh home", {}, { freshHome: true });
    default: {
      const never: never = kill.kind;
      throw new Error(`unknown kill ${String(never)}`);
    }
  }
}

/**
 * K5: another host's controller (a PID namespace of its own, so nobody can judge the other by
 * its pid) comes up, the target is SIGSTOPped with a run in flight, and stays stopped until the
 * other has taken that run over by heartbeat silence alone; then it is woken and left running
 * beside the others, with its stale view of the runs it held, until the wave ends. R3 (each
 * turn once) and R6 judge what it did on waking.
 */
async function stallPastSilence(kill: KillRecord, current: LiveController, firstRunId: string, tools: KillTools): Promise<LiveController> {
  const { start, note, db, t0 } = tools;
  const other = await start("K5: another host", {}, { freshHome: true, pidNamespace: true });
  // The other host took seconds to come up, and the run chosen before may have ended since:
  // the stall lands on a run in session now (waiting a little for one).
  let runId: string | null = null;
  for (const until = Date.now() + 20_000; runId === null && Date.now() < until; ) {
    runId = (await tools.runInFlight(current))?.id ?? null;
    if (runId === null) await new Promise((r) => setTimeout(r, 100));
  }
  if (runId === null) {
    kill.landed = false;
    kill.detail = `no run was in session on pid ${current.handle.pid} once the other host was up (run ${firstRunId} had been)`;
    note("kill", `K5 did not land: ${kill.detail}`);
    current.killedByWave = true; // left running beside the other, as a woken one is
    tools.bystanders.push(current);
    return other;
  }
  kill.interruptedRunId = runId;
  current.handle.kill("SIGSTOP");
  await tools.afterStop?.();
  const stoppedAt = Date.now();
  const lastSeen = current.bootId ? (await db.controllerProcess.findUnique({ where: { bootId: current.bootId }, select: { lastSeenAt: true } }))?.lastSeenAt ?? null : null;
  note("kill", `K5: SIGSTOP pid ${current.handle.pid} with run ${runId} in flight; pid ${other.handle.pid} on another host`);
  // Past the silence window, a live controller's recovery judges the stalled executor and takes
  // the run over: the other host's, or one a wave left running (an earlier K5's woken one).
  const giveUpAt = stoppedAt + K5_SILENCE_MS * 4 + 15_000;
  let takenBy: string | null = null;
  let ended: string | null = null;
  while (Date.now() < giveUpAt) {
    const run = await db.run.findUnique({ where: { id: runId }, select: { executorBootId: true, status: true } });
    if (run?.executorBootId && run.executorBootId !== current.bootId) {
      takenBy = run.executorBootId;
      break;
    }
    if (run && (run.status === "succeeded" || run.status === "failed")) {
      ended = run.status;
      break;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  kill.takeoverAtMs = takenBy ? Date.now() - t0 : null;
  // How the taker judged the stalled one: its recovery says so once it starts (still stalled).
  let reason: string | null = null;
  while (takenBy && reason === null && Date.now() < giveUpAt) {
    const started = await db.runEvent.findFirst({ where: { runId, type: "recovery_started", bootId: takenBy }, orderBy: { id: "desc" }, select: { data: true } });
    const was = (started?.data as { executorWas?: unknown } | null)?.executorWas;
    if (typeof was === "string") reason = was;
    else await new Promise((r) => setTimeout(r, 100));
  }
  kill.takeoverReason = reason;
  const stalledMs = Date.now() - stoppedAt;
  current.handle.kill("SIGCONT");
  current.killedByWave = true; // no longer the wave's target; its exit is not a crash
  tools.bystanders.push(current);
  // Landed as planned only when the takeover came from silence: nothing else may judge another host.
  const bySilence = reason?.startsWith("silent_for_") ?? false;
  kill.landed = takenBy !== null && bySilence;
  const silentFor = lastSeen ? ` (${((Date.now() - lastSeen.getTime()) / 1000).toFixed(1)} s since its last heartbeat; the window is ${K5_SILENCE_MS / 1000} s)` : "";
  const by = takenBy === other.bootId ? `pid ${other.handle.pid} on another host` : `the controller with boot ${takenBy}`;
  kill.detail = takenBy
    ? `stalled pid ${current.handle.pid} ${(stalledMs / 1000).toFixed(1)} s${silentFor}; run ${runId} taken over by ${by} (judged ${reason ?? "without a recovery_started event"})${bySilence ? "" : ", not by silence"}; the stalled one woken and left running`
    : `run ${runId} was not taken over within ${(stalledMs / 1000).toFixed(1)} s of the stall${ended ? ` (it ${ended} first)` : ""}`;
  note("kill", `K5: SIGCONT pid ${current.handle.pid} after ${(stalledMs / 1000).toFixed(1)} s; ${takenBy ? `run ${runId} taken over by ${by}` : "no takeover"}`);
  return other;
}

function isLoopback(url: string): boolean {
  const host = new URL(url).hostname;
  return host === "localhost" || host === "::1" || host === "[::1]" || host.startsWith("127.");
}

async function runOfLease(db: Db, leaseId: string): Promise<string | null> {
  return (await db.environmentLease.findUnique({ where: { id: leaseId }, select: { runId: true } }))?.runId ?? null;
}

/** Whether each planned fault fired: the provider applied it (its rule's uses) to that task's run. */
async function faultRecords(admin: EmulatorAdminClient, plan: WavePlan, runsByTask: Map<string, string>, atKill: Map<FaultName, Omit<FaultRecord, "task" | "fault" | "runId">>): Promise<FaultRecord[]> {
  const rules = await admin.faults();
  return plan.tasks.flatMap((task) =>
    task.faults.map((fault) => {
      const runId = runsByTask.get(task.key) ?? null;
      const planned = faultRule(fault, runId ?? "");
      if (!planned) {
        const landed = atKill.get(fault);
        return { task: task.key, fault, runId, ...(landed ?? { fired: false, uses: 0, detail: "no kill landed for it to land with" }) };
      }
      const kind = planned.fault.kind;
      const rule = rules.find((r) => r.match.runId === runId && r.fault.kind === kind);
      const uses = rule?.used ?? 0;
      return {
        task: task.key,
        fault,
        runId,
        fired: uses > 0,
        uses,
        detail: !rule ? "no such rule at the provider" : uses > 0 ? `applied ${uses} time(s) to run ${runId}` : `never applied to run ${runId}`,
      };
    }),
  );
}

function faultRule(fault: FaultName, runId: string) {
  switch (fault) {
    case "bind":
      return { match: { runId }, fault: { kind: "bind_conflict" as const }, times: 1 };
    case "reject":
      return { match: { runId }, fault: { kind: "reject" as const }, times: null };
    case "late":
      return { match: { runId }, fault: { kind: "late" as const, delayMs: 2500 }, times: 1 };
    case "unconnected":
      return { match: { runId }, fault: { kind: "never_connect" as const }, times: null };
    case "slow_start":
      // Longer than the wave controllers' create timeout (1.5 s): found by its name after it.
      return { match: { runId }, fault: { kind: "slow_start" as const, ms: 2500, outcome: "started" as const }, times: 1 };
    case "rate_limit":
      return { match: { runId }, fault: { kind: "rate_limit" as const, retryAfterSeconds: 1, throttler: "sandbox-lifecycle" }, times: 2 };
    case "outage":
    case "archive":
      // Provider-wide and at the first kill: set when it lands (see `KillEffects`), not here.
      return null;
    default: {
      const never: never = fault;
      throw new Error(`unknown fault ${String(never)}`);
    }
  }
}

/** How long the `outage` fault keeps the provider answering 503 to everything. */
export const WAVE_OUTAGE_MS = 5_000;

/**
 * The faults that land with the first kill, between the stop of its controller and the start
 * of the next: `outage` (every provider call answers 503 for WAVE_OUTAGE_MS) and `archive` (the
 * faulted task's sandbox stopped and archived, as auto-stop then auto-archive would while no
 * controller runs). Each says afterwards what it did.
 */
class KillEffects {
  private outage: { ruleId: string; fromMs: number; toMs: number | null; timer: NodeJS.Timeout | null } | null = null;
  private archived: { sandboxId: string; runId: string; atMs: number } | null = null;
  private archiveMiss: string | null = null;
  private done = false;

  constructor(
    private readonly plan: WavePlan,
    private readonly admin: EmulatorAdminClient,
    private readonly db: Db,
    private readonly runsByTask: Map<string, string>,
    private readonly t0: number,
    private readonly note: (kind: string, detail: string) => void,
  ) {}

  /** Whether the first kill may land now: an archive needs its run in session on a sandbox (or over, when it cannot land at all). */
  async readyToLand(): Promise<boolean> {
    if (this.done) return true;
    const task = this.plan.tasks.find((t) => t.faults.includes("archive"));
    const runId = task ? this.runsByTask.get(task.key) : undefined;
    if (!runId) return true;
    const run = await this.db.run.findUnique({ where: { id: runId }, select: { status: true, phase: true, leases: { where: { status: "active" }, select: { id: true } } } });
    if (!run || !["queued", "starting", "running", "suspended"].includes(run.status)) return true;
    return run.phase === "session_open" && run.leases.length > 0;
  }

  /** Runs once, at the first kill, before its restart. */
  async beforeRestart(): Promise<void> {
    if (this.done) return;
    this.done = true;
    const faults = new Set(this.plan.tasks.flatMap((t) => t.faults));
    if (faults.has("outage")) {
      const rule = await this.admin.setFault({ fault: { kind: "http_error", status: 503 } });
      const fromMs = Date.now() - this.t0;
      this.outage = { ruleId: rule.id, fromMs, toMs: null, timer: null };
      this.note("fault", `outage: the provider answers 503 to every call for ${WAVE_OUTAGE_MS} ms`);
      this.outage.timer = setTimeout(() => void this.endOutage(), WAVE_OUTAGE_MS);
    }
    const task = this.plan.tasks.find((t) => t.faults.includes("archive"));
    if (task) {
      const runId = this.runsByTask.get(task.key);
      const lease = runId ? await this.db.environmentLease.findFirst({ where: { runId, status: "active", providerLeaseId: { not: null } }, orderBy: { createdAt: "desc" } }) : null;
      if (!lease?.providerLeaseId || !runId) {
        this.archiveMiss = `run ${runId ?? "?"} held no sandbox when the kill landed`;
      } else {
        try {
          await this.admin.setState(lease.providerLeaseId, "archived", undefined, { fromStarted: true });
          this.archived = { sandboxId: lease.providerLeaseId, runId, atMs: Date.now() - this.t0 };
          this.note("fault", `archive: sandbox ${lease.providerLeaseId} of run ${runId} stopped and archived while no controller runs`);
        } catch (err) {
          this.archiveMiss = `sandbox ${lease.providerLeaseId} could not be archived: ${err instanceof Error ? err.message : String(err)}`;
        }
      }
    }
  }

  async endOutage(): Promise<void> {
    const o = this.outage;
    if (!o || o.toMs !== null) return;
    if (o.timer) clearTimeout(o.timer);
    o.toMs = Date.now() - this.t0;
    // Its uses are read before it goes: a cleared rule keeps no count.
    this.outageUses = (await this.admin.faults().catch(() => [])).find((r) => r.id === o.ruleId)?.used ?? 0;
    await this.admin.clearFaults(o.ruleId).catch(() => {});
    this.note("fault", `outage over after ${o.toMs - o.fromMs} ms`);
  }

  /** The records of the two faults, with how long the outage lasted and which runs waited through it. */
  async records(waveRunIds: string[]): Promise<Map<FaultName, Omit<FaultRecord, "task" | "fault" | "runId">>> {
    await this.endOutage();
    const out = new Map<FaultName, Omit<FaultRecord, "task" | "fault" | "runId">>();
    if (this.outage) {
      const uses = this.outageUses;
      const waited = await this.db.proof.findMany({ where: { runId: { in: waveRunIds }, kind: "recovery_attempt", verdict: "wait" }, distinct: ["runId"], select: { runId: true } });
      const lasted = (this.outage.toMs ?? 0) - this.outage.fromMs;
      out.set("outage", {
        fired: uses > 0,
        uses,
        detail: `the provider answered 503 to ${uses} call(s) for ${lasted} ms from ${this.outage.fromMs} ms; ${waited.length} run(s) waited through it (recovery_attempt proofs "wait")`,
      });
    }
    if (this.archived) out.set("archive", { fired: true, uses: 1, detail: `sandbox ${this.archived.sandboxId} of run ${this.archived.runId} archived at ${this.archived.atMs} ms while no controller ran` });
    else if (this.archiveMiss) out.set("archive", { fired: false, uses: 0, detail: this.archiveMiss });
    return out;
  }

  /** Uses of the outage rule, read when it was cleared. */
  private outageUses = 0;
}

interface Decoy {
  id: string;
  kind: "another_instance" | "another_company" | "another_host";
}

/** R6's subjects: sandboxes that are not provably this instance's to destroy. */
async function plantDecoys(db: Db, admin: EmulatorAdminClient, instanceId: string): Promise<Decoy[]> {
  const dead = evidenceIdentity(await exitedProcessIdentity());
  const intent = async (creator: object, labels: { instance: string; company: string }): Promise<string> => {
    const op = crypto.randomUUID();
    const name = creationName("rw", op);
    const planted = await admin.plant({ name, labels: buildLabels({ instanceId: labels.instance, companyId: labels.company, operationId: op }) });
    await db.sandboxCreationIntent.create({
      data: {
        id: op,
        instanceId,
        companyId: COMPANY,
        runId: `decoy-${op}`,
        creationName: name,
        labels: json({ instance: instanceId, company: COMPANY, operation: op }),
        creator: json(creator),
        settleDeadline: new Date(Date.now() + 60_000),
        nextAttemptAt: new Date(Date.now() + 30 * 60_000),
      },
    });
    return planted.id;
  };
  const otherInstance = await admin.plant({ name: `rw-create-decoy-${crypto.randomUUID()}`, labels: buildLabels({ instanceId: `${instanceId}-other`, companyId: COMPANY, operationId: "decoy" }) });
  return [
    { id: otherInstance.id, kind: "another_instance" },
    // Our intent, but the sandbox under its name says another company: never destroyed.
    { id: await intent(dead, { instance: instanceId, company: "co-decoy" }), kind: "another_company" },
    // Our intent and labels, but its creator lives in another PID space: never judged exited.
    { id: await intent({ ...dead, bootId: crypto.randomUUID(), pidSpace: "ps-decoy-host" }, { instance: instanceId, company: COMPANY }), kind: "another_host" },
  ];
}

async function retryWhereOffered(
  db: Db,
  plan: WavePlan,
  runsByTask: Map<string, string>,
  retried: Map<string, number>,
  limit: number,
  id: string,
  note: (kind: string, detail: string) => void,
): Promise<number> {
  let made = 0;
  for (const task of plan.tasks) {
    if ((retried.get(task.key) ?? 0) >= limit || !runsByTask.has(task.key)) continue;
    const latest = await db.run.findFirst({ where: { taskId: `${id}-${task.key}`, nextRun: null }, orderBy: { createdAt: "desc" } });
    if (!latest || latest.status !== "failed" || latest.outcome !== "terminal_failure" || !latest.canRetry) continue;
    // A double click: both must land on the same successor (R3).
    const actor = { id: `wave:${id}`, role: "board" };
    const clicks = await Promise.allSettled([retryRun(db, latest.id, actor), retryRun(db, latest.id, actor)]);
    // A click the server could not take (a busy database) is one a board user makes again:
    // it is noted, not the end of the wave. R3 judges the successors the database holds.
    for (const c of clicks) if (c.status === "rejected") note("retry", `${task.key}: a Retry click failed: ${c.reason instanceof Error ? c.reason.message.split("\n")[0] : String(c.reason)}`);
    const successors = [...new Set(clicks.flatMap((c) => (c.status === "fulfilled" ? [c.value.run.id] : [])))];
    if (successors.length === 0) continue;
    retried.set(task.key, (retried.get(task.key) ?? 0) + 1);
    made += 1;
    note("retry", `${task.key}: Retry after ${latest.failureCode} → run ${successors.join(" and ")}${successors.length > 1 ? " (TWO successors)" : ""}`);
  }
  return made;
}

async function taskStates(db: Db, id: string) {
  const runs = await db.run.findMany({ where: { waveId: id }, orderBy: { createdAt: "asc" } });
  const byTask = new Map<string, (typeof runs)[number]>();
  for (const r of runs) byTask.set(r.taskId, r); // latest wins
  return [...byTask.entries()].map(([taskId, r]) => ({
    key: taskId.slice(id.length + 1),
    status: r.status,
    turns: `${r.turnsDone}/${r.turnsPlanned}`,
    code: r.failureCode,
    canRetry: r.canRetry,
    settled: r.status === "succeeded" || (r.status === "failed" && r.outcome === "terminal_failure"),
  }));
}

async function cleanupDone(db: Db, instanceId: string): Promise<boolean> {
  const held = await db.environmentLease.count({ where: { instanceId, status: { in: ["active", "pending_cleanup"] } } });
  const due = await db.sandboxCreationIntent.count({ where: { instanceId, status: "pending", NOT: { runId: { startsWith: "decoy-" } } } });
  return held === 0 && due === 0;
}

async function collectRuns(db: Db, taskId: string): Promise<CollectedRun[]> {
  const runs = await db.run.findMany({ where: { taskId }, include: { events: { where: { type: { in: ["retry_scheduled", "run_failed", "startup_failed"] } } } } });
  return runs.map((r) => ({
    id: r.id,
    status: r.status,
    outcome: r.outcome,
    failureCode: r.failureCode,
    canRetry: r.canRetry,
    nextAction: r.nextAction,
    previousRunId: r.previousRunId,
    restarts: r.restarts,
    turnsDone: r.turnsDone,
    turnsPlanned: r.turnsPlanned,
    createdAt: r.createdAt.toISOString(),
    startedAt: r.startedAt?.toISOString() ?? null,
    finishedAt: r.finishedAt?.toISOString() ?? null,
    codesSeen: [
      ...new Set([
        ...(r.failureCode ? [r.failureCode] : []),
        ...r.events.map((e) => (e.data as { code?: string } | null)?.code).filter((c): c is string => typeof c === "string"),
      ]),
    ],
  }));
}

/**
 * Time from the moment an intent's sandbox became an orphan — its creator died or gave
 * up waiting for the provider, whichever came first — to the sandbox's destruction.
 */
async function reclaimTimes(db: Db, instanceId: string, deaths: Map<number, number>, t0: number) {
  const intents = await db.sandboxCreationIntent.findMany({ where: { instanceId, status: "reclaimed" }, include: { lease: true } });
  const gaveUp = await db.runEvent.findMany({ where: { type: "create_failed", runId: { in: intents.map((i) => i.runId).filter(isUuid) } } });
  return intents.map((i) => {
    const destroyedAt = i.lease?.endedAt?.getTime() ?? i.resolvedAt?.getTime() ?? Date.now();
    const creatorPid = (i.creator as { pid?: number } | null)?.pid;
    const died = creatorPid !== undefined ? deaths.get(creatorPid) : undefined;
    const candidates = [
      died !== undefined ? t0 + died : Infinity,
      ...gaveUp.filter((e) => (e.data as { operationId?: string } | null)?.operationId === i.id).map((e) => e.at.getTime()),
    ].filter((t) => t <= destroyedAt);
    const orphanedAt = candidates.length ? Math.min(...candidates) : i.createdAt.getTime();
    return { intentId: i.id, sandboxId: i.lease?.providerLeaseId ?? null, seconds: Math.max(0, (destroyedAt - orphanedAt) / 1000) };
  });
}

async function healthy(url: string): Promise<boolean> {
  try {
    const res = await fetch(`${url}/health`, { signal: AbortSignal.timeout(1000) });
    return res.ok;
  } catch {
    return false;
  }
}

/** The emulator's database on the application's server (as npm start names it). */
async function emulatorDatabase(appUrl: string, env: Env): Promise<string> {
  const name = env.EMULATOR_DATABASE !== "runwarden_emulator" ? env.EMULATOR_DATABASE : `${databaseOf(appUrl)}_emulator`;
  return (await openDatabase({ env: { ...env, DATABASE_URL: withDatabase(appUrl, name) } })).url;
}
