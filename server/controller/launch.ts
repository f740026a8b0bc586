import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import { childEnv } from "../env";
import { controllerArgs } from "./program";

/**
 * Launches a real controller process (`scripts/controller.ts`, bundled: ./program.ts) and watches it: ready when it
 * prints `controller ready:`, its output kept, its exit awaited. The wave harness and the
 * bench drive controllers through it; the tests' harness (server/test/) re-uses it.
 */
export interface ControllerProcessHandle {
  child: ChildProcess;
  /** The controller's pid as this host sees it (inside a PID namespace: not `child.pid`, which is `unshare`'s). */
  readonly pid: number;
  output: string[];
  ready: Promise<void>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  kill(signal: NodeJS.Signals): void;
}


/** Short timings for controllers that live a few seconds (a wave, the bench, tests). */
export const FAST_CONTROLLER_ENV: Record<string, string> = {
  RUNWARDEN_POLL_MS: "50",
  RUNWARDEN_SWEEP_INTERVAL_MS: "500",
  RUNWARDEN_RETRY_DELAY_MS: "200",
  RUNWARDEN_TURN_MS: "50",
  RUNWARDEN_SESSION_OPEN_TIMEOUT_MS: "1500",
  RUNWARDEN_SETTLE_MS: "8000",
  RUNWARDEN_CREATE_TIMEOUT_MS: "5000",
  RUNWARDEN_EXECUTOR_TIMEOUT_MS: "60000",
  LOG_LEVEL: "info",
};

export interface LaunchOptions {
  readyTimeoutMs?: number;
  /**
   * Run it in a PID namespace of its own (`unshare --pid --fork --mount-proc`, as root): its
   * PID space differs from every other controller's, as another host's would, so no one
   * judges it by its pid and it judges no one by theirs. Signals go to the controller itself.
   */
  pidNamespace?: boolean;
  /**
   * Its working directory: the runner programs it ships are read from `runner/` there when the
   * bundle has none beside it (providers/runner.ts) — how a test runs the next build's runner.
   */
  cwd?: string;
  /**
   * What node runs instead of this build's bundled controller: an older build's own entry
   * (`--import tsx scripts/controller.ts` in its checkout, `cwd`) — how a test runs the build
   * before this one against this one's schema (server/test/older-build.ts).
   */
  nodeArgs?: string[];
}

/** Starts a controller with exactly `env` on top of this process's child environment. */
export function launchController(env: Record<string, string | undefined>, options: LaunchOptions = {}): ControllerProcessHandle {
  // The bundled program, run by node itself: no loader process in between for a signal to miss
  // (in a namespace, `unshare` waits in between, and signals skip it: see `kill`).
  const program = options.nodeArgs ?? controllerArgs();
  const [command, args] = options.pidNamespace
    ? ["unshare", ["--pid", "--fork", "--mount-proc", "--kill-child", process.execPath, ...program]]
    : [process.execPath, program];
  const child = spawn(command, args, {
    env: childEnv(env),
    ...(options.cwd ? { cwd: options.cwd } : {}),
    stdio: ["ignore", "pipe", "pipe"],
  });
  // unshare's one child is the controller; until it is known, signals go to unshare.
  let innerPid: number | null = null;
  const output: string[] = [];
  let onReady: () => void = () => {};
  let onFail: (err: Error) => void = () => {};
  const ready = new Promise<void>((resolve, reject) => {
    onReady = resolve;
    onFail = reject;
  });
  let buf = "";
  const take = (chunk: Buffer) => {
    buf += chunk.toString();
    const lines = buf.split("\n");
    buf = lines.pop() ?? "";
    for (const line of lines) {
      output.push(line);
      if (line.startsWith("controller ready:")) onReady();
    }
  };
  child.stdout!.on("data", take);
  child.stderr!.on("data", take);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on("exit", (code, signal) => {
      onFail(new Error(`controller exited before it was ready (${signal ?? code}): ${output.slice(-5).join(" | ")}`));
      resolve({ code, signal });
    });
  });
  const timer = setTimeout(() => onFail(new Error(`controller not ready within ${options.readyTimeoutMs ?? 30_000} ms`)), options.readyTimeoutMs ?? 30_000);
  void ready.finally(() => clearTimeout(timer)).catch(() => {});
  const readyWithPid = options.pidNamespace
    ? ready.then(() => {
        innerPid = childOf(child.pid!);
        if (innerPid === null) throw new Error(`the controller in its PID namespace (unshare pid ${child.pid}) has no process`);
      })
    : ready;
  void readyWithPid.catch(() => {});
  return {
    child,
    get pid() {
      return innerPid ?? child.pid!;
    },
    output,
    ready: readyWithPid,
    exited,
    kill: (signal) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      if (innerPid === null) {
        child.kill(signal);
        return;
      }
      try {
        process.kill(innerPid, signal);
      } catch {
        // exited between the check and the signal
      }
    },
  };
}

/** The one child of `pid` (Linux), or null. */
function childOf(pid: number): number | null {
  try {
    const first = fs.readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim().split(/\s+/)[0];
    return first ? Number(first) : null;
  } catch {
    return null;
  }
}
