import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { stopCluster } from "../db/cluster";
import { childEnv } from "../env";
import { killSandboxProcessesUnder } from "./emulator-child";

/**
 * `npm start` as a user runs it: `scripts/start.ts` in a checkout, in a process group of its
 * own (a terminal's foreground job), so a test can press Ctrl-C on the whole group.
 */
export interface ProductProcess {
  child: ChildProcess;
  /** Everything it printed so far, stdout and stderr interleaved. */
  output(): string;
  /** Milliseconds from spawn to "Runwarden is running"; rejects if it exits first. */
  ready: Promise<number>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Ctrl-C: SIGINT to the whole process group. */
  interrupt(): void;
  /** SIGKILL to the group and every child group it started (test clean-up). */
  kill(): void;
  /** The process groups of the services it runs now (each a child of npm start), with their command lines. */
  services(): Array<{ pid: number; cmdline: string }>;
}

/**
 * How it is launched: by default the start script itself (`node --import tsx scripts/start.ts`);
 * a test of how a user stops it launches it as the user does — `npm start`, or inside a
 * pseudo-terminal (`script -qfec "npm start" /dev/null`), its stdin a pipe the test types into.
 */
export interface ProductLaunch {
  argv: [string, ...string[]];
  /** Keep stdin open as a pipe (a terminal's keyboard, for `script`). */
  stdin?: boolean;
}

export function startProduct(checkout: string, env: Record<string, string | undefined>, readyTimeoutMs = 240_000, launch?: ProductLaunch): ProductProcess {
  const started = Date.now();
  const [command, ...args] = launch?.argv ?? [process.execPath, "--import", "tsx", path.join(checkout, "scripts/start.ts")];
  const child = spawn(command, args, {
    cwd: checkout,
    env: childEnv({
      // Nothing of the test run's own database or ports leaks into the product.
      DATABASE_URL: undefined,
      RUNWARDEN_PG_PORT: undefined,
      RUNWARDEN_DATA_DIR: undefined,
      E2E_DATABASE_URL: undefined,
      NODE_ENV: undefined,
      VITEST: undefined,
      NEXT_TELEMETRY_DISABLED: "1",
      FORCE_COLOR: "0",
      ...env,
    }),
    detached: true,
    stdio: [launch?.stdin ? "pipe" : "ignore", "pipe", "pipe"],
  });
  let text = "";
  child.stdout?.setEncoding("utf8");
  child.stderr?.setEncoding("utf8");
  child.stdout?.on("data", (c: string) => (text += c));
  child.stderr?.on("data", (c: string) => (text += c));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on("exit", (code, signal) => resolve({ code, signal }));
  });
  const ready = new Promise<number>((resolve, reject) => {
    const timer = setInterval(() => {
      if (/Runwarden is running at/.test(text)) {
        clearInterval(timer);
        resolve(Date.now() - started);
      } else if (child.exitCode !== null || child.signalCode !== null) {
        clearInterval(timer);
        reject(new Error(`npm start exited before it was ready:\n${text}`));
      } else if (Date.now() - started > readyTimeoutMs) {
        clearInterval(timer);
        reject(new Error(`npm start was not ready within ${readyTimeoutMs} ms:\n${text}`));
      }
    }, 100);
  });
  const signalGroup = (signal: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, signal);
    } catch {
      // gone
    }
  };
  return {
    child,
    output: () => text,
    ready,
    exited,
    interrupt: () => signalGroup("SIGINT"),
    kill: () => {
      // The services run in groups of their own: find them by parent pid, however deep (npm, a terminal).
      for (const pid of descendantPids(child.pid!)) {
        try {
          process.kill(-pid, "SIGKILL");
        } catch {
          // gone
        }
      }
      signalGroup("SIGKILL");
    },
    services: () =>
      childPids(child.pid!).flatMap((pid) => {
        try {
          return [{ pid, cmdline: fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ") }];
        } catch {
          return [];
        }
      }),
  };
}

function descendantPids(root: number): number[] {
  const out: number[] = [];
  for (let i = 0, next = [root]; next.length > 0 && i < 8; i++) {
    next = next.flatMap(childPids);
    out.push(...next);
  }
  return out;
}

function childPids(parent: number): number[] {
  const out: number[] = [];
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid === parent) out.push(Number(entry));
    } catch {
      // exited meanwhile
    }
  }
  return out;
}

/** A port nothing listens on right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/** Lines that betray a crash: a JavaScript stack frame, or PostgreSQL shutting down under a client. */
export function crashLines(output: string): string[] {
  return output.split("\n").filter((l) => /^\s+at .+(\(.+:\d+:\d+\)|:\d+:\d+)$/.test(l) || /57P03|the database system is shutting down|Unhandled|uncaught/i.test(l));
}

/** The product's environment for a test: free ports, loopback only, no first-boot wave. */
export async function productEnv(extra: Record<string, string> = {}): Promise<Record<string, string>> {
  return {
    PORT: String(await freePort()),
    EMULATOR_PORT: String(await freePort()),
    HOSTNAME: "127.0.0.1",
    RUNWARDEN_FIRST_BOOT_WAVE: "off",
    LOG_LEVEL: "info",
    ...extra,
  };
}

/** What a test leaves when it is done with a product: the product killed, its sandboxes' processes and its embedded PostgreSQL ended. */
export function productCleanup(p: ProductProcess, dataRoot: string): () => Promise<void> {
  return async () => {
    if (p.child.exitCode === null && p.child.signalCode === null) {
      p.kill();
      await p.exited;
    }
    await endInstallation(dataRoot);
  };
}

/** What a stopped product leaves on purpose, ended: its sandboxes' processes and its embedded PostgreSQL (and a relocated cluster's directory). */
export async function endInstallation(dataRoot: string): Promise<void> {
  // Ctrl-C suspends a run's runner on purpose, and a stopped product leaves it so: end it.
  killSandboxProcessesUnder(dataRoot);
  const link = path.join(dataRoot, "pg");
  if (!fs.existsSync(link)) return;
  const dataDir = fs.realpathSync(link);
  await stopCluster(dataDir);
  if (fs.lstatSync(link).isSymbolicLink()) fs.rmSync(path.dirname(dataDir), { recursive: true, force: true });
}

/** Polls `check` every 250 ms until it holds. */
export async function waitUntil(check: () => Promise<boolean>, timeoutMs: number, what = "condition"): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`${what} not met within ${timeoutMs} ms`);
}
