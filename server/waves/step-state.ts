/**
 * The restart-chaos wave's state machine (docs/rules.md §5) as data: what the wave knows
 * (`WaveState`), what its shell sees or did (`WaveObservation`) and what it asks the shell to
 * do (`WaveAction`). The transition is `nextWaveStep` in server/waves/step.ts.
 */

import type { KillKind, KillRecord } from "../shared/wave-report";
import type { PlannedKill } from "./plan";

export type CrashAt = NonNullable<PlannedKill["crashAt"]>;

/** A controller process the wave started, as the shell reported it up. */
export interface ControllerView {
  pid: number;
  bootId: string | null;
  /** When it was ready, on the wave's clock: the next kill's delay counts from here. */
  readyAtMs: number;
  generation: number;
}

/** A task's latest run, as read on a poll. */
export interface TaskView {
  key: string;
  runId: string;
  status: string;
  outcome: string | null;
  failureCode: string | null;
  canRetry: boolean;
  turnsDone: number;
  turnsPlanned: number;
  executorBootId: string | null;
}

/** The target controller's exit, as the shell saw it on a poll. */
export interface ExitView {
  pid: number;
  /** Its signal or exit code. */
  code: string;
  /** When it died, on the wave's clock. */
  diedAtMs: number;
  /** True when the wave itself signalled it: its death is then no crash point. */
  byWave: boolean;
  /** Its crash-point line (`server/controller/crash.ts`), with the run the lease named resolved. */
  crash: { point: string; runId: string | null; leaseId: string | null } | null;
}

/** Why a controller is started: the kill it follows, and its part in that kill. */
export type StartReason =
  | { as: "first" }
  | { as: "after_exit" }
  /** K1, K2, K15: the controller that follows the kill. */
  | { as: "restart"; kill: number }
  /** K4: the controller that dies at the crash point. */
  | { as: "armed"; kill: number }
  /** K4: the controller after the crash point. */
  | { as: "after_crash"; kill: number }
  /** K5: the other host's controller, up before the stall. */
  | { as: "other_host"; kill: number }
  /** KD: the next build's controller, up beside the target before the old one is stopped. */
  | { as: "next_build"; kill: number };

/** Which build a controller runs: this checkout, or the next one a KD deploys (server/waves/run/next-build.ts). */
export type Build = "current" | "next";

export type WaveAction =
  /** An event for the report (docs/waves.md): what the wave decided and why. */
  | { type: "note"; kind: string; detail: string }
  /** Submit a task's run with its faults (at the start, or a held-back task released). */
  | { type: "submit"; key: string }
  /** Start a controller; `build: "next"` once a KD has deployed the next build (every later start is of it). */
  | { type: "start"; why: string; generation: number; reason: StartReason; crashAt?: CrashAt; freshHome?: boolean; pidNamespace?: boolean; build?: "next" }
  /** Signal the controller and wait for its exit (SIGKILL: K1, K4, K15, KD's old build; SIGTERM: K2's drain and the end). */
  | { type: "stop"; pid: number; signal: "SIGKILL" | "SIGTERM" }
  /** K5: SIGSTOP. */
  | { type: "stall"; pid: number }
  /** K5: SIGCONT; the woken controller is left running beside the others. */
  | { type: "wake"; pid: number }
  /** The first kill's provider-wide faults (outage, archive), between its stop and the next start; once. */
  | { type: "land_faults" }
  /** The restart forecast (docs/rules.md §2.12) of the runs the stopped controller executes, for R7; `build: "next"`: as the next build judges (the one that recovers them after a KD). */
  | { type: "forecast"; kill: KillKind; bootId: string | null; build?: "next" }
  /** K2: whether the drained run was suspended since the kill fired. */
  | { type: "check_drain"; kill: number; runId: string; sinceMs: number }
  /** K5, KD: a run in session on the controller about to be stalled (KD: stopped), the other host (KD: the next build) up beside it. */
  | { type: "find_run_in_flight"; kill: number; bootId: string | null; pid: number }
  /**
   * K5, KD: wait until another controller took the stalled (KD: stopped) one's run over (or gave
   * up); with `sinceMs`, a run that ended first counts as taken over by the boot whose
   * `recovery_started` event since then names it.
   */
  | { type: "watch_takeover"; kill: number; runId: string; stalledBootId: string | null; pid: number; sinceMs?: number }
  /** Retry clicks at once on a failed run (two: an impatient board user's double click; R3 wants one successor). */
  | { type: "retry"; key: string; runId: string; failureCode: string | null; clicks: number }
  /** Settled (or out of time): stop the controllers, collect, judge R1–R7, store. */
  | { type: "judge"; reason: "settled" | "timeout" };

export type WaveObservation =
  /** Before the first poll: submit what is not held back and start the first controller. */
  | { kind: "begin"; atMs: number }
  | {
      kind: "poll";
      atMs: number;
      /** Latest run per submitted task. */
      tasks: TaskView[];
      /** The target controller, if it exited. */
      exited: ExitView | null;
      /** A run in session on the target controller (docs/rules.md §5: a kill lands on work in flight). */
      inFlightRunId: string | null;
      /** The first kill may land: its archive's run holds a sandbox in session, or it cannot land at all. */
      archiveReady: boolean;
      /** No lease held, no intent due: the sweeps finished the cleanup. */
      cleanupDone: boolean;
    }
  | { kind: "started"; atMs: number; reason: StartReason; controller: ControllerView }
  | { kind: "drained"; kill: number; suspended: boolean }
  | { kind: "run_in_flight"; kill: number; runId: string | null }
  | {
      kind: "takeover";
      kill: number;
      atMs: number;
      /** The boot that took the run over, or null. */
      takenBy: string | null;
      /** Its recovery's `executorWas` (e.g. `silent_for_7s`). */
      reason: string | null;
      /** The run ended before any takeover. */
      ended: string | null;
      stalledMs: number;
      /** Since the stalled controller's last heartbeat, when the watch ended. */
      silentForMs: number | null;
    }
  | { kind: "retried"; key: string; successors: number };

export interface WaveConfig {
  /** Retries per task, like a board user. */
  retries: number;
  /** After settling, how long the sweeps get to finish the cleanup. */
  quiesceMs: number;
  /** Give up waiting for the tasks to settle this long after the loop began ... */
  timeoutMs: number;
  /** ... that is, at this time on the wave's clock. */
  deadlineAtMs: number;
  /** K5's silence window, for the report's wording. */
  silenceMs: number;
}

export interface WaveState {
  config: WaveConfig;
  plannedKills: PlannedKill[];
  taskKeys: string[];
  phase: "starting" | "running" | "done";
  /** Tasks not yet submitted: released one at a time while a planned kill still needs work. */
  held: string[];
  /** Tasks submitted (their runs are the wave's). */
  submitted: string[];
  /** The controller the next kill targets. */
  controller: ControllerView | null;
  /** Controllers the wave no longer targets but leaves running (a K5's woken one): stopped at the end. */
  bystanders: ControllerView[];
  /** Bystanders drained (SIGTERM) once a later kill needed work: their runs are the target's to recover. */
  drained: number[];
  /** The last generation handed to a start. */
  generation: number;
  kills: KillRecord[];
  /** Index of the next kill to fire. */
  next: number;
  /** A K4 that fired: its armed controller has yet to reach the crash point. */
  armed: number | null;
  /** A K5 between its other host's start and the wake: the controller being stalled. */
  stalling: { kill: number; target: ControllerView; runId: string | null } | null;
  /**
   * A KD in progress (server/waves/step-deploy.ts): the old build's controller, the next
   * build's once it is up, and how far the deploy got — the next build starting beside the
   * old one, both live (until DEPLOY_OVERLAP_MS after it is ready), a run in session on the
   * old one looked for, the old one stopped and its run's takeover watched.
   */
  deploy: { kill: number; old: ControllerView; next: ControllerView | null; phase: "starting" | "overlap" | "finding" | "watching" } | null;
  /** The build every controller started from now on runs: the next one once a KD fired. */
  build: Build;
  retried: Record<string, number>;
  /** Times each kill (by index) was fired again after it fired and did not land (server/waves/step-refire.ts). */
  refired: Record<number, number>;
  settledSinceMs: number | null;
}

export interface WaveStep {
  state: WaveState;
  actions: WaveAction[];
}

/** The record of the wave's planned kill #index (thrown when there is none: a step bug). */
export function killAt(state: WaveState, index: number): KillRecord {
  const kill = state.kills[index];
  if (!kill) throw new Error(`no planned kill #${index}`);
  return kill;
}
