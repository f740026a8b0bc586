import { spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";

/**
 * The emulator's sandboxes on this host: each one a directory (`<dataDir>/sandboxes/<id>`,
 * its home under `home/`), its commands real child processes the way Daytona's sandbox
 * daemon runs them (docs/runner.md). Every process started in a sandbox carries the marker
 * variable below, so stopping or deleting the sandbox finds and kills all of them — also
 * the detached ones, and also after an emulator restart (like a container's cgroup).
 */

export const SANDBOX_MARKER = "RUNWARDEN_EMULATOR_SANDBOX";

export interface SandboxHost {
  root: string;
  home: string;
}

export function sandboxHost(dataDir: string, id: string): SandboxHost {
  if (!/^[A-Za-z0-9._-]+$/.test(id)) throw new Error(`unsafe sandbox id ${JSON.stringify(id)}`);
  const root = path.resolve(dataDir, "sandboxes", id);
  return { root, home: path.join(root, "home") };
}

export function ensureSandboxDirs(host: SandboxHost): void {
  fs.mkdirSync(host.home, { recursive: true });
}

/**
 * Written before a sandbox's first process starts (and kept across emulator restarts, like a
 * cgroup): a sandbox without it has no process to look for, and a stop or delete skips the
 * scan of every process on the host (that scan was most of a delete's cost; docs/decisions/0003-cost-at-scale.md).
 */
function processesFlag(host: SandboxHost): string {
  return path.join(host.root, ".has-processes");
}

function markProcesses(host: SandboxHost): void {
  fs.mkdirSync(host.root, { recursive: true });
  fs.writeFileSync(processesFlag(host), "");
}

/**
 * A path as the toolbox takes it: relative paths are relative to the home. Null when it
 * would leave the sandbox's directory (the emulator shares the host's file system).
 */
export function resolveInSandbox(host: SandboxHost, raw: string): string | null {
  const abs = path.resolve(host.home, raw);
  return abs === host.root || abs.startsWith(`${host.root}${path.sep}`) ? abs : null;
}

export interface ExecuteInput {
  command: string;
  cwd?: string;
  envs?: Record<string, string>;
  /** Seconds; none → 360 s. */
  timeout?: number;
}

export type ExecuteResult = { timedOut: false; exitCode: number; result: string } | { timedOut: true; result: string };

const MAX_OUTPUT = 4 * 1024 * 1024;

/**
 * `process/execute`: the command piped to a shell's stdin in its own process group, stdout
 * and stderr combined; the answer waits until the output pipes close. On timeout the group
 * is killed.
 */
export function execute(host: SandboxHost, env: Record<string, string>, input: ExecuteInput): Promise<ExecuteResult> {
  return new Promise((resolve) => {
    const cwd = input.cwd ? resolveInSandbox(host, input.cwd) ?? host.home : host.home;
    fs.mkdirSync(cwd, { recursive: true });
    markProcesses(host);
    const child = spawn("/bin/sh", [], { cwd, env: asProcessEnv({ ...env, ...(input.envs ?? {}) }), detached: true, stdio: ["pipe", "pipe", "pipe"] });
    const chunks: Buffer[] = [];
    let size = 0;
    const keep = (c: Buffer) => {
      if (size < MAX_OUTPUT) chunks.push(c);
      size += c.length;
    };
    child.stdout.on("data", keep);
    child.stderr.on("data", keep);
    child.stdin.on("error", () => {});
    child.stdin.end(`${input.command}\n`);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup(child.pid);
    }, (input.timeout && input.timeout > 0 ? input.timeout : 360) * 1000);
    child.on("error", (err) => keep(Buffer.from(`${err.message}\n`)));
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      const result = Buffer.concat(chunks).toString("utf8");
      resolve(timedOut ? { timedOut: true, result } : { timedOut: false, exitCode: code ?? (signal ? 137 : 1), result });
    });
  });
}

function killGroup(pid: number | undefined) {
  if (!pid) return;
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    // already gone
  }
}

/** Every live process started in this sandbox (by its marker), found through /proc. */
export function sandboxPids(host: SandboxHost): number[] {
  const wanted = `${SANDBOX_MARKER}=${host.root}`;
  const out: number[] = [];
  let entries: string[];
  try {
    entries = fs.readdirSync("/proc");
  } catch {
    return out;
  }
  for (const e of entries) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const environ = fs.readFileSync(`/proc/${e}/environ`, "utf8");
      if (environ.split("\0").includes(wanted)) out.push(Number(e));
    } catch {
      // gone, or not ours to read
    }
  }
  return out;
}

/** Kills every process of the sandbox (a stop or delete). Returns how many were signalled. */
export async function killSandboxProcesses(host: SandboxHost): Promise<number> {
  let total = 0;
  if (!fs.existsSync(processesFlag(host))) return total;
  // A dying parent may still fork: look again until nothing is left.
  for (let round = 0; round < 5; round++) {
    const pids = sandboxPids(host).filter((p) => p !== process.pid);
    if (pids.length === 0) break;
    for (const pid of pids) {
      try {
        process.kill(pid, "SIGKILL");
        total++;
      } catch {
        // gone
      }
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  return total;
}

// Ports handed out by this process, so two sandboxes created close together never share one.
const handedOut = new Set<number>();
/** Below Linux's default ephemeral range (32768–60999), which outgoing connections draw from. */
const INGRESS_PORTS = { from: 20000, to: 31999 } as const;

/**
 * A free loopback port for a sandbox's runner ingress (each sandbox has its own). Not port 0:
 * the kernel's pick is an ephemeral port, and any outgoing connection on the machine may take
 * it between this check and runnerd's bind (a `runner_ingress_bind_conflict` nobody injected).
 */
export async function freePort(): Promise<number> {
  const span = INGRESS_PORTS.to - INGRESS_PORTS.from + 1;
  if (handedOut.size > span / 2) handedOut.clear();
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = INGRESS_PORTS.from + Math.floor(Math.random() * span);
    if (handedOut.has(port) || !(await canListen(port))) continue;
    handedOut.add(port);
    return port;
  }
  throw new Error(`no free loopback port in ${INGRESS_PORTS.from}–${INGRESS_PORTS.to} for a sandbox's runner ingress after 200 tries`);
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

/**
 * The `bind_conflict` fault: a process of the sandbox listening on its ingress port. It
 * carries the sandbox marker, so stopping the sandbox ends it; `release` ends it sooner.
 */
export async function startSquatter(host: SandboxHost, env: Record<string, string>, port: number): Promise<{ release(): void }> {
  markProcesses(host);
  const child = spawn(
    process.execPath,
    ["-e", `require("net").createServer().listen(${port}, "127.0.0.1", () => console.log("squatting")); setTimeout(() => {}, 1e9)`],
    { env: asProcessEnv(env), stdio: ["ignore", "pipe", "ignore"], detached: true },
  );
  await new Promise<void>((resolve) => {
    child.stdout.once("data", () => resolve());
    child.once("exit", () => resolve());
    setTimeout(resolve, 5000);
  });
  return {
    release() {
      killGroup(child.pid);
    },
  };
}

/** Files under a directory, as absolute paths (admin listing). */
export function listFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else out.push(p);
    }
  };
  walk(dir);
  return out.sort();
}

/** A sandbox's environment is exactly what it is given, nothing from the emulator's own. */
function asProcessEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  return env as unknown as NodeJS.ProcessEnv;
}
