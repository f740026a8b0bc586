import fs from "node:fs";
import path from "node:path";
import { FAST_CONTROLLER_ENV, launchController, type ControllerProcessHandle } from "../../controller/launch";
import { parseCrashLine } from "../../controller/crash";
import type { ControllerView, WaveAction } from "../step";
import type { WaveContext } from "./context";
import { makeNextBuild, nextBuildDir } from "./next-build";

/**
 * The wave's controller processes (docs/rules.md §5): started (a KD's and every later one in
 * the next build's directory: ./next-build.ts), signalled (SIGKILL, a drain's SIGTERM, a K5's
 * SIGSTOP and SIGCONT) and seen to exit, as `server/waves/step.ts` decides.
 */

/**
 * A K5 wave's silence window (RUNWARDEN_EXECUTOR_TIMEOUT_MS) for all its controllers: short
 * enough that a stall past it fits in a wave, long beside the 2 s heartbeat.
 */
export const K5_SILENCE_MS = 6000;

/**
 * A KD wave's turn length (RUNWARDEN_TURN_MS) for all its controllers: the run KD fires on must
 * still be in session on the old build once the next build is up and both were live a second
 * (server/waves/step-deploy.ts); with 400 ms turns a short run was often over by then.
 */
export const KD_TURN_MS = 1000;

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

interface LiveController {
  handle: ControllerProcessHandle;
  view: ControllerView;
  /** True once the wave itself signalled it (so its death is not a crash point). */
  killedByWave: boolean;
}

export interface ControllerExit {
  pid: number;
  code: string;
  diedAtMs: number;
  byWave: boolean;
  crash: { point: string; runId: string | null; leaseId: string | null } | null;
}

export class WaveControllers {
  private readonly byPid = new Map<number, LiveController>();
  /** Every process launched, ready or not: none outlives the wave. */
  private readonly launched: ControllerProcessHandle[] = [];
  /** pid → when it died (ms on the wave's clock): when an intent's sandbox became an orphan. */
  readonly deaths = new Map<number, number>();
  private readonly silence: Record<string, string>;
  private readonly turns: Record<string, string>;
  /** The next build's directory (a KD's), made once, the first time a controller of it starts. */
  private nextBuildRoot: string | null = null;

  constructor(private readonly ctx: WaveContext) {
    this.silence = ctx.plan.kills.some((k) => k.kind === "K5") ? { RUNWARDEN_EXECUTOR_TIMEOUT_MS: String(K5_SILENCE_MS) } : {};
    this.turns = ctx.plan.kills.some((k) => k.kind === "KD") ? { RUNWARDEN_TURN_MS: String(KD_TURN_MS) } : {};
  }

  async start(a: Extract<WaveAction, { type: "start" }>): Promise<ControllerView> {
    const { ctx } = this;
    const dir = path.join(ctx.home, a.freshHome ? `home-${a.generation}` : "home");
    fs.mkdirSync(dir, { recursive: true });
    const p = launchController(
      {
        ...WAVE_TIMINGS,
        DATABASE_URL: ctx.databaseUrl,
        // A wave's faults, decoys and forecasts are its emulator's: its controllers never reach a
        // real Daytona this process was given (npm start's first-boot wave beside a real provider).
        DAYTONA_API_URL: undefined,
        DAYTONA_API_KEY: undefined,
        EMULATOR_URL: ctx.emuUrl,
        EMULATOR_API_KEY: ctx.options.env.EMULATOR_API_KEY,
        RUNWARDEN_INSTANCE_ID: ctx.instanceId,
        RUNWARDEN_CONTROLLER_HOME: dir,
        // Absolute: a next build's controller runs in another directory (./next-build.ts).
        RUNWARDEN_DATA_DIR: path.resolve(ctx.options.env.RUNWARDEN_DATA_DIR),
        RUNWARDEN_CONCURRENCY: String(ctx.plan.concurrency),
        RUNWARDEN_TEST_BREAK_RULE: ctx.options.breakRule,
        ...this.turns,
        ...(ctx.options.turnMs !== undefined ? { RUNWARDEN_TURN_MS: String(ctx.options.turnMs) } : {}),
        ...this.silence,
        ...(a.crashAt ? { RUNWARDEN_CRASH_AT: a.crashAt } : {}),
      },
      { pidNamespace: a.pidNamespace ?? false, ...(a.build === "next" ? { cwd: this.nextBuild() } : {}) },
    );
    this.launched.push(p);
    void p.exited.then(() => this.deaths.set(p.pid, Date.now() - ctx.t0));
    await p.ready;
    // Only once it is ready is `pid` the controller's own in a PID namespace (server/controller/launch.ts), not `unshare`'s.
    const bootId = p.output.map((l) => /^controller ready: bootId=(\S+)/.exec(l)?.[1]).find(Boolean) ?? null;
    const live: LiveController = { handle: p, view: { pid: p.pid, bootId, readyAtMs: Date.now() - ctx.t0, generation: a.generation }, killedByWave: false };
    this.byPid.set(p.pid, live);
    ctx.note("controller", `#${a.generation} up (pid ${p.pid}${a.build === "next" ? ", next build" : ""}${a.pidNamespace ? " in a PID namespace of its own" : ""}, ${a.why}${a.crashAt ? `, crashes at ${a.crashAt}` : ""})`);
    return { ...live.view };
  }

  /**
   * KD's next build under the wave's home (docs/rules.md §5): another runnerd.mjs, released
   * beside this build's, and one expand migration more, which its first controller applies.
   */
  private nextBuild(): string {
    if (this.nextBuildRoot === null) {
      const build = makeNextBuild(nextBuildDir(this.ctx.home), { releaseOld: true, migrations: true });
      this.ctx.note("deploy", `next build made in ${build.root} (runnerd.mjs ${build.digest}, released beside this build's)`);
      this.nextBuildRoot = build.root;
    }
    return this.nextBuildRoot;
  }

  private live(pid: number): LiveController {
    const c = this.byPid.get(pid);
    if (!c) throw new Error(`no controller pid ${pid} in this wave`);
    return c;
  }

  /** Signals it and waits for its exit. */
  async stop(pid: number, signal: NodeJS.Signals): Promise<void> {
    const c = this.live(pid);
    c.killedByWave = true;
    c.handle.kill(signal);
    await c.handle.exited;
  }

  /** K5: SIGSTOP. */
  stall(pid: number): void {
    const c = this.live(pid);
    c.killedByWave = true; // no longer the wave's target; its exit is not a crash
    c.handle.kill("SIGSTOP");
  }

  /** K5: SIGCONT; left running beside the others until the end. */
  wake(pid: number): void {
    this.live(pid).handle.kill("SIGCONT");
  }

  /** Whether that controller exited, with its crash-point line if it printed one. */
  exitOf(pid: number, nowMs: number): ControllerExit | null {
    const c = this.live(pid);
    const child = c.handle.child;
    if (child.exitCode === null && child.signalCode === null) return null;
    return {
      pid,
      code: String(child.signalCode ?? child.exitCode),
      diedAtMs: this.deaths.get(pid) ?? nowMs,
      byWave: c.killedByWave,
      crash: c.handle.output.map(parseCrashLine).find((x) => x !== null) ?? null,
    };
  }

  /** The end of a wave: those still running get a SIGTERM, as a deployment stops them. */
  async stopRunning(pids: number[]): Promise<void> {
    for (const pid of pids) {
      const c = this.byPid.get(pid);
      if (c && c.handle.child.exitCode === null && c.handle.child.signalCode === null) await this.stop(pid, "SIGTERM");
    }
  }

  /** Whatever the outcome: no controller of the wave outlives it. */
  async killAll(): Promise<void> {
    for (const handle of this.launched) {
      if (handle.child.exitCode === null && handle.child.signalCode === null) {
        handle.kill("SIGCONT"); // a stalled one dies of SIGKILL anyway; its unshare then exits
        handle.kill("SIGKILL");
        await handle.exited;
      }
    }
  }
}
