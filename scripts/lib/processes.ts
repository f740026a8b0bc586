import { spawn, type ChildProcess } from "node:child_process";
import net from "node:net";
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
  options: { env?: NodeJS.ProcessEnv; prefix?: boolean } = {},
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
      for (const line of lines) out.write(`${tag}${line}\n`);
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

export function runToEnd(command: string, args: string[], env?: NodeJS.ProcessEnv): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { env: env ?? childEnv({}), stdio: "inherit" });
    child.on("exit", (code, signal) => resolve(code ?? (signal ? 128 : 1)));
    child.on("error", () => resolve(127));
  });
}

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
