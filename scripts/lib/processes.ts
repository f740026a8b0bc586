import { spawn, type ChildProcess } from "node:child_process";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { childEnv } from "../../server/env";

/** Starts and stops the child processes of `npm start` and `npm test`, in order. */

export interface Service {
  name: string;
  child: ChildProcess;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export function binPath(name: string): string {
  return path.resolve("node_modules", ".bin", name);
}

/** The JS entry of a package binary, run with this Node directly (no npx, no shell). */
export function nodeBin(pkgBin: string): string {
  return path.resolve("node_modules", pkgBin);
}

export function startService(
  name: string,
  command: string,
  args: string[],
  options: { env?: NodeJS.ProcessEnv; prefix?: boolean; format?: (line: string) => string } = {},
): Service {
  const child = spawn(command, args, {
    env: options.env ?? childEnv({}),
    // Own process group: a terminal's Ctrl-C reaches only us, and we stop children in order.
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  const tag = options.prefix === false ? "" : `[${name}] `;
  const relay = (stream: NodeJS.ReadableStream | null, out: NodeJS.WriteStream) => {
    let buf = "";
    stream?.setEncoding("utf8");
    stream?.on("data", (chunk: string) => {
      buf += chunk;
      const lines = buf.split("\n");
      buf = lines.pop() ?? "";
      for (const line of lines) out.write(`${tag}${options.format ? options.format(line) : line}\n`);
    });
    stream?.on("end", () => {
      if (buf) out.write(`${tag}${buf}\n`);
    });
  };
  relay(child.stdout, process.stdout);
  relay(child.stderr, process.stderr);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on("exit", (code, signal) => resolve({ code, signal }));
    child.on("error", () => resolve({ code: 127, signal: null }));
  });
  return { name, child, exited };
}

/** SIGTERM to the child's whole group, then SIGKILL after the grace period. */
export async function stopService(service: Service, graceMs = 10_000): Promise<void> {
  const { child } = service;
  if (child.exitCode !== null || child.signalCode !== null) return;
  signalGroup(child, "SIGTERM");
  const timer = setTimeout(() => signalGroup(child, "SIGKILL"), graceMs);
  await service.exited;
  clearTimeout(timer);
}

function signalGroup(child: ChildProcess, signal: NodeJS.Signals) {
  if (!child.pid) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    try {
      child.kill(signal);
    } catch {
      // already gone
    }
  }
}

const LEVELS: Record<number, string> = { 10: "trace", 20: "debug", 30: "info", 40: "WARN", 50: "ERROR", 60: "FATAL" };

/** A pino JSON line as one readable line; anything else unchanged. */
export function prettyLogLine(line: string): string {
  if (!line.startsWith("{")) return line;
  try {
    const { level, msg, time: _time, pid: _pid, hostname: _host, name: _name, ...rest } = JSON.parse(line) as Record<string, unknown>;
    const extra = Object.entries(rest)
      .map(([k, v]) => `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`)
      .join(" ");
    return `${LEVELS[level as number] ?? String(level)} ${String(msg ?? "")}${extra ? `  ${extra}` : ""}`;
  } catch {
    return line;
  }
}

/**
 * glibc's allocator for the dashboard's server: two arenas instead of eight per core, and
 * allocations of 1 MB or more mapped and unmapped on their own (glibc otherwise raises that
 * threshold to the largest block freed, up to 32 MB: a sign-in's scrypt block then stays in an
 * arena). Measured with a sign-in and four pages (`next start`, signed-in operator): RSS 265–279
 * → 229–234 MB; no change in request times within noise.
 */
export const WEB_SERVER_ENV = { MALLOC_ARENA_MAX: "2", MALLOC_MMAP_THRESHOLD_: "1048576" } as const;

/**
 * The dashboard's production server as `npm start` runs it. A 2 MB young generation (V8's
 * default is 16 MB per semi-space) keeps the server's RSS lower for a few more minor
 * collections: most of what a request allocates dies young either way.
 *
 * The old generation may grow to 1.5× what survived the last full collection: V8's own
 * factor here reaches 4× (~90 MB live let the heap commit 300 MB of garbage before a full
 * collection, the /orphans peak at 10 k sandboxes). Measured with --trace-gc over 45 s of
 * /orphans at 10 k: heap committed 300 → 142 MB, RSS over the pre-tab figure +194 → +25 MB;
 * the cost, 13 full collections instead of 6 (+0.43 s of GC over the minute, under 1 % of a core).
 */
export function webServerArgs(port: number, host: string): string[] {
  return ["--max-semi-space-size=2", "--heap-growing-percent=50", nodeBin("next/dist/bin/next"), "start", "-p", String(port), "-H", host];
}

/** Node with tsx as a loader in the same process (no wrapper process to relay signals). */
export function tsxArgs(script: string): string[] {
  return ["--import", "tsx", path.resolve(script)];
}

/**
 * Runs a command to its end. For a command that runs beside others, so that their lines do not
 * mix: `held` prints its output in one piece when it ends; `prefix` prints each line as it comes,
 * behind the prefix (a long step that hangs still shows where it is).
 */
export function runToEnd(command: string, args: string[], env?: NodeJS.ProcessEnv, options: { held?: boolean; prefix?: string } = {}): Promise<number> {
  return new Promise((resolve) => {
    const piped = options.held || options.prefix !== undefined;
    const child = spawn(command, args, { env: env ?? childEnv({}), stdio: piped ? ["ignore", "pipe", "pipe"] : "inherit" });
    running.add(child);
    child.on("exit", () => running.delete(child));
    const chunks: Buffer[] = [];
    let partial = "";
    const take = (d: Buffer) => {
      if (options.prefix === undefined) {
        chunks.push(d);
        return;
      }
      const lines = (partial + d.toString("utf8")).split("\n");
      partial = lines.pop() ?? "";
      if (lines.length) process.stdout.write(lines.map((l) => `${options.prefix}${l}\n`).join(""));
    };
    child.stdout?.on("data", take);
    child.stderr?.on("data", take);
    child.on("close", (code, signal) => {
      if (partial) process.stdout.write(`${options.prefix}${partial}\n`);
      if (chunks.length) process.stdout.write(Buffer.concat(chunks));
      resolve(code ?? (signal ? 128 : 1));
    });
    child.on("error", () => resolve(127));
  });
}

/** The commands `runToEnd` is running now. */
const running = new Set<ChildProcess>();

/**
 * Stops every command `runToEnd` is running: SIGTERM, then SIGKILL after `graceMs` for any still
 * there. What they started stops with them (a test's controller or product watches its
 * launcher, server/lib/stop-signals.ts; Playwright stops its web server).
 */
export async function stopRunning(graceMs: number): Promise<void> {
  const children = [...running];
  const ended = children.map((c) => (c.exitCode !== null || c.signalCode !== null ? Promise.resolve() : new Promise<void>((r) => c.once("exit", () => r()))));
  for (const c of children) c.kill("SIGTERM");
  const timer = setTimeout(() => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  }, graceMs);
  await Promise.all(ended);
  clearTimeout(timer);
}

/** The checks `npm test` and `npm run test:quick` both run, as commands of this Node. */
export const CHECKS = {
  // Next's route types first (.next/types, in tsconfig's include): what `next build` would check.
  typegen: [nodeBin("next/dist/bin/next"), "typegen"],
  typecheck: [nodeBin("typescript/bin/tsc"), "--noEmit"],
  lint: [nodeBin("eslint/bin/eslint.js"), "--max-warnings", "0", "."],
};

export function portFree(port: number, host = "0.0.0.0"): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once("error", () => resolve(false));
    srv.listen(port, host, () => srv.close(() => resolve(true)));
  });
}

export async function waitForHttp(url: string, timeoutMs: number, isDead: () => boolean): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (isDead()) return false;
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
      if (res.status < 500) return true;
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return false;
}

/**
 * Busy loops, one per core unless told, for a test or a check that must hold on a loaded machine.
 * Each ends when `stop` is called and, however its starter ends (a SIGKILL included), by itself:
 * it looks at its parent pid every few million turns and exits once it has been re-parented.
 */
export function startBusyLoops(count = os.availableParallelism()): { pids: number[]; stop: () => void } {
  // The starter's pid is given, not read at the loop's start: a starter killed before then would be missed.
  const loop = "const p = Number(process.argv[1]); for (let i = 1; ; i++) if ((i & 0xffffff) === 0 && process.ppid !== p) process.exit(0);";
  const children = Array.from({ length: count }, () => spawn(process.execPath, ["-e", loop, String(process.pid)], { stdio: "ignore" }));
  return {
    pids: children.map((c) => c.pid!),
    stop: () => {
      for (const c of children) c.kill("SIGKILL");
    },
  };
}
