import fs from "node:fs";
import path from "node:path";
import { createDb } from "../db/client";
import { openDatabase } from "../db/embedded";
import { migrate } from "../db/migrate";
import { emulatorApiKeys, emulatorUrl as configuredEmulatorUrl } from "../emulator/config";
import { EmulatorAdminClient } from "../emulator/admin-client";
import { startEmulator, type EmulatorHandle } from "../emulator/server";
import { json } from "../controller/records";
import type { WaveEvent, WaveReport } from "../shared/wave-report";
import { planWave, waveId } from "./plan";
import { initialWaveState, nextWaveStep, type WaveObservation, type WaveState } from "./step";
import { recordWaveStart } from "./store";
import { WAVE_COMPANY, waveConfig, type WaveContext, type WaveRunOptions } from "./run/context";
import { K5_SILENCE_MS, WaveControllers } from "./run/controllers";
import { KillEffects } from "./run/faults-at-kill";
import { forecastAtKill } from "./run/forecast-at-kill";
import { judgeWave } from "./run/judge";
import { observePoll } from "./run/observe";
import { performAction, type WaveTools } from "./run/perform";
import { emulatorDatabase, healthy, isLoopback, plantDecoys } from "./run/setup";

export type { WaveProgress, WaveRunOptions } from "./run/context";
export { WAVE_OUTAGE_MS } from "./run/faults-at-kill";

/**
 * Runs one restart-chaos wave (docs/rules.md §5) against the emulator with real controller
 * processes: plants decoys, submits the tasks with their faults (holding some back until the
 * planned kills need work in flight), kills and restarts controllers as the seeded plan says,
 * clicks Retry (twice, like an impatient board user) where the catalogue offers it, waits for
 * everything to settle, then judges R1–R7 per task and stores the report.
 *
 * The loop: observe (run/observe.ts) → `nextWaveStep` (step.ts, every decision) → perform each
 * action (run/perform.ts), feeding what an action saw straight back into the step.
 */
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
  let controllers: WaveControllers | null = null;
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
    const ctx: WaveContext = { id, instanceId, options, plan, db, databaseUrl: database.url, admin, emuUrl, emulatorKey, home, markers, t0, note, runsByTask: new Map() };
    await recordWaveStart(db, { id, seed: options.seed, instanceId, companyId: WAVE_COMPANY, plan, config: waveConfig(options), startedAt });
    note("wave", `started ${id}: ${plan.tasks.length} tasks, kills ${plan.kills.map((k) => k.kind).join(",") || "none"}, faults ${options.faults.join(",") || "none"}`);

    const decoys = await plantDecoys(db, admin, instanceId);
    note("decoys", `planted ${decoys.map((d) => d.kind).join(", ")}`);

    controllers = new WaveControllers(ctx);
    const tools: WaveTools = { controllers, effects: new KillEffects(plan, admin, db, ctx.runsByTask, t0, note), forecast: forecastAtKill(ctx) };
    let state: WaveState = initialWaveState(plan, {
      retries: options.retries,
      quiesceMs: options.quiesceMs ?? 20_000,
      timeoutMs: options.timeoutMs,
      deadlineAtMs: Date.now() - t0 + options.timeoutMs,
      silenceMs: K5_SILENCE_MS,
    });
    /** One observation through the step, each action performed in order, what an action saw fed back at once. */
    const feed = async (observation: WaveObservation): Promise<boolean> => {
      const step = nextWaveStep(state, observation);
      state = step.state;
      for (const action of step.actions) {
        if (action.type === "judge") return true;
        const seen = await performAction(ctx, tools, action);
        if (seen && (await feed(seen))) return true;
      }
      return false;
    };

    let done = await feed({ kind: "begin", atMs: Date.now() - t0 });
    while (!done) {
      if (options.signal?.aborted) throw new Error("the wave was stopped before it finished");
      const poll = await observePoll(ctx, state, controllers, tools.effects);
      done = await feed(poll);
      options.onProgress?.({
        id,
        elapsedMs: poll.atMs,
        tasks: poll.tasks.map((t) => ({ key: t.key, status: t.status, turns: `${t.turnsDone}/${t.turnsPlanned}`, code: t.failureCode })),
        controller: state.generation,
        killsDone: state.next,
        killsLanded: state.kills.filter((k) => k.landed).length,
        killsPlanned: state.kills.length,
      });
      if (!done) await new Promise((r) => setTimeout(r, 200));
    }
    await controllers.stopRunning([...(state.controller ? [state.controller.pid] : []), ...state.bystanders.map((b) => b.pid)]);
    return await judgeWave(ctx, { startedAt, decoys, kills: state.kills, effects: tools.effects, deaths: controllers.deaths, events });
  } catch (err) {
    await db.chaosWave.updateMany({ where: { id, status: "running" }, data: { status: "aborted", finishedAt: new Date(), summary: json({ error: err instanceof Error ? err.message : String(err) }) } }).catch(() => {});
    throw err;
  } finally {
    await controllers?.killAll();
    await emulator?.close();
    await db.$disconnect();
    await database.stop();
  }
}
