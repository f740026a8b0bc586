import type { Db } from "../../db/client";
import type { EmulatorAdminClient } from "../../emulator/admin-client";
import type { Env } from "../../env";
import type { WaveEvent } from "../../shared/wave-report";
import type { WaveOptions, WavePlan } from "../plan";

/** What `runWave` (server/waves/runner.ts) is asked to do. */
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

/** What every part of a running wave's shell shares: its ids, database, emulator, clock and event log. */
export interface WaveContext {
  id: string;
  instanceId: string;
  options: WaveRunOptions;
  plan: WavePlan;
  db: Db;
  databaseUrl: string;
  admin: EmulatorAdminClient;
  emuUrl: string;
  emulatorKey: string;
  /** The wave's directory: controller homes, turn markers. */
  home: string;
  /** Where each turn's marker is written (R3), when the sandboxes' commands run on this host. */
  markers: string | null;
  /** The wave's clock starts here (Date.now()). */
  t0: number;
  note: (kind: string, detail: string) => void;
  /** Each submitted task's first run. */
  runsByTask: Map<string, string>;
}

export const WAVE_COMPANY = "co-wave";

/** What the wave was asked to do, as stored beside its plan. */
export function waveConfig(o: WaveRunOptions) {
  return { tasks: o.tasks, kills: o.kills, faults: o.faults, concurrency: o.concurrency, retries: o.retries, timeoutMs: o.timeoutMs, breakRule: o.breakRule ?? null };
}
