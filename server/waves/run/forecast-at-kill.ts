import path from "node:path";
import pino from "pino";
import { controllerConfig } from "../../controller/config";
import type { Db } from "../../db/client";
import { LIVE_RUN_STATUSES } from "../../engine";
import type { Env } from "../../env";
import { storeForecast } from "../../forecasts/store";
import { currentProcessIdentity } from "../../process/identity";
import { providerFromEnv } from "../../providers/from-env";
import { releasesIn } from "../../providers/runner-releases";
import { servicesOf } from "../../services";
import type { Build } from "../step-state";
import type { WaveContext } from "./context";
import { nextBuildDir } from "./next-build";

/** A read-only forecaster on the wave's instance and emulator, as this process's build judges (its runner releases: server/providers/runner.ts). */
export function waveForecaster(db: Db, env: Env, emuUrl: string, emulatorKey: string, instanceId: string) {
  const { provider, runner, target } = providerFromEnv({ ...env, DAYTONA_API_URL: undefined, EMULATOR_URL: emuUrl, EMULATOR_API_KEY: emulatorKey }, { instanceId });
  return servicesOf({
    db,
    provider,
    providerTarget: target,
    runner,
    identity: currentProcessIdentity(),
    config: controllerConfig(env, { instanceId }),
    log: pino({ name: "wave-forecast", level: "warn" }),
    drain: new AbortController(),
  });
}

/**
 * After a KD the restart is the next build's, whose runner releases differ (it knows its own
 * runnerd.mjs; this build does not): the forecast is then judged with the next build's releases
 * (its `runner/` directory: server/waves/run/next-build.ts).
 */
function nextBuildReleases(ctx: WaveContext) {
  return releasesIn(path.join(nextBuildDir(ctx.home), "runner"));
}

/**
 * The restart forecast (docs/rules.md §2.12) a wave takes at each kill, read-only, against its
 * own instance and emulator, stored with the wave's id for R7.
 */
export function forecastAtKill(ctx: WaveContext): (bootId: string | null, kind: string, build?: Build) => Promise<void> {
  const { db, id, instanceId, note } = ctx;
  const forecaster = waveForecaster(db, ctx.options.env, ctx.emuUrl, ctx.emulatorKey, instanceId);
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
   * the target is stopped and before the restart. Kept: the runs in session that did not move while it
   * was taken (a per-turn run can pass a turn in that time: its forecast would be of a state
   * the kill never meets); taken again up to three times while some moved. A run still
   * acquiring or bootstrapping is not kept: its sandbox moves on (a runner starting) without
   * its row changing, so no snapshot can say the kill met the state that was forecast.
   */
  return async (bootId, kind, build = "current") => {
    if (!bootId) return;
    const runs = await db.run.findMany({ where: { waveId: id, executorBootId: bootId, status: { in: [...LIVE_RUN_STATUSES] } }, select: { id: true } });
    if (runs.length === 0) {
      // Another live controller (a K5's woken one, left running: docs/rules.md §5) can take the
      // stopped one's runs over before this read: said, not skipped in silence.
      note("forecast", `before ${kind}: not taken: no live run was executed by the stopped controller any more`);
      return;
    }
    const runIds = runs.map((r) => r.id);
    try {
      for (let attempt = 1; ; attempt += 1) {
        const before = await snapshot(runIds);
        const forecast = await forecaster.takeForecast({ all: true }, { runIds, ...(build === "next" ? { releases: nextBuildReleases(ctx) } : {}) });
        const after = await snapshot(runIds);
        const moved = forecast.runs.filter((r) => before.get(r.runId) !== after.get(r.runId)).map((r) => r.runId);
        if (moved.length > 0 && attempt < 3) continue;
        const settling = forecast.runs.filter((r) => !moved.includes(r.runId) && r.phase !== "session_open").map((r) => r.runId);
        const kept = forecast.runs.filter((r) => !moved.includes(r.runId) && !settling.includes(r.runId));
        const stored = await storeForecast(db, { durationMs: forecast.durationMs, runs: kept }, { instanceId, actor: { id: `wave:${id}`, role: "operator" }, source: "wave", scope: { all: true }, waveId: id });
        const count = (p: string) => kept.filter((r) => r.prediction === p).length;
        note(
          "forecast",
          `before ${kind}${build === "next" ? " (as the next build judges)" : ""}: ${count("continues")} continue, ${count("ends")} end, ${count("operator")} for an operator (forecast ${stored.id}, ${forecast.durationMs} ms${moved.length ? `; not kept, moved while forecast: ${moved.join(", ")}` : ""}${settling.length ? `; not kept, not yet in session: ${settling.join(", ")}` : ""})`,
        );
        return;
      }
    } catch (err) {
      note("forecast", `before ${kind}: not taken: ${err instanceof Error ? err.message : String(err)}`);
    }
  };
}
