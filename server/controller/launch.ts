import { spawn, type ChildProcess } from "node:child_process";
import { childEnv } from "../env";
import { controllerArgs } from "./program";

/**
 * Launches a real controller process (`scripts/controller.ts`, bundled: ./program.ts) and watches it: ready when it
 * prints `controller ready:`, its output kept, its exit awaited. The wave harness and the
 * bench drive controllers through it; the tests' harness (server/test/) re-uses it.
 */
export interface ControllerProcessHandle {
  child: ChildProcess;
  pid: number;
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

/** Starts a controller with exactly `env` on top of this process's child environment. */
export function launchController(env: Record<string, string | undefined>, options: { readyTimeoutMs?: number } = {}): ControllerProcessHandle {
  // The bundled program, run by node itself: no loader process in between for a signal to miss.
  const child = spawn(process.execPath, controllerArgs(), {
    env: childEnv(env),
    stdio: ["ignore", "pipe", "pipe"],
  });
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
  return {
    child,
    pid: child.pid!,
    output,
    ready,
    exited,
    kill: (signal) => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    },
  };
}
