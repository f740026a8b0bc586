import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { childEnv } from "../env";

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
}

export function startProduct(checkout: string, env: Record<string, string | undefined>, readyTimeoutMs = 240_000): ProductProcess {
  const started = Date.now();
  const child = spawn(process.execPath, ["--import", "tsx", path.join(checkout, "scripts/start.ts")], {
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
    stdio: ["ignore", "pipe", "pipe"],
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
      // The services run in groups of their own: find them by parent pid.
      for (const pid of childPids(child.pid!)) {
        try {
          process.kill(-pid, "SIGKILL");
        } catch {
          // gone
        }
      }
      signalGroup("SIGKILL");
    },
  };
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
