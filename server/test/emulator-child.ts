import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { SANDBOX_MARKER } from "../emulator/sandbox-host";
import { childEnv } from "../env";

const root = path.resolve(import.meta.dirname, "../..");

export async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  const p = (srv.address() as net.AddressInfo).port;
  await new Promise((r) => srv.close(r));
  return p;
}

/**
 * `scripts/emulator.ts` as a real child process in its own process group, so a test can
 * SIGKILL it and start it again on the same port (one node process: `--import tsx`, no wrapper).
 */
export class EmulatorChild {
  private proc: ChildProcess | null = null;

  constructor(private readonly opts: { port: number; adminUrl: string; database: string; dataDir?: string }) {}

  get running(): boolean {
    return this.proc !== null;
  }

  /** Resolves with the URL the emulator prints once it listens. */
  start(): Promise<string> {
    const { port, adminUrl, database, dataDir } = this.opts;
    const proc = spawn(process.execPath, ["--import", "tsx", "scripts/emulator.ts"], {
      cwd: root,
      env: childEnv({
        EMULATOR_PORT: String(port),
        DATABASE_URL: adminUrl,
        EMULATOR_DATABASE: database,
        EMULATOR_URL: undefined,
        ...(dataDir ? { RUNWARDEN_DATA_DIR: dataDir } : {}),
      }),
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    this.proc = proc;
    let output = "";
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`emulator did not start: ${output}`)), 30_000);
      const onData = (chunk: Buffer) => {
        output += chunk.toString("utf8");
        const m = /emulator listening on (http:\/\/\S+)/.exec(output);
        if (m?.[1]) {
          clearTimeout(timer);
          resolve(m[1]);
        }
      };
      proc.stdout?.on("data", onData);
      proc.stderr?.on("data", onData);
      proc.once("exit", (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`emulator exited (${signal ?? code}): ${output}`));
      });
    });
  }

  /** Signals the whole group without waiting (SIGSTOP: a provider that hangs; SIGCONT: back). Its sandboxes' processes are groups of their own. */
  signal(signal: NodeJS.Signals): void {
    if (!this.proc?.pid) throw new Error("the emulator is not running");
    process.kill(-this.proc.pid, signal);
  }

  /** Signals the whole group and waits for the exit; nothing to do when it is not running. */
  async kill(signal: NodeJS.Signals = "SIGKILL"): Promise<void> {
    const proc = this.proc;
    if (!proc?.pid || proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise((r) => proc.once("exit", r));
    process.kill(-proc.pid, signal);
    await exited;
    this.proc = null;
  }
}

/**
 * SIGKILLs every process an emulator started in a sandbox under `dir` (its data dir), in one
 * pass over /proc: the admin reset scans /proc once per sandbox, too slow for hundreds.
 */
export function killSandboxProcessesUnder(dir: string): number {
  const prefix = `${SANDBOX_MARKER}=${path.resolve(dir)}`;
  let killed = 0;
  for (const e of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(e)) continue;
    try {
      if (!fs.readFileSync(`/proc/${e}/environ`, "utf8").split("\0").some((v) => v.startsWith(prefix))) continue;
      process.kill(Number(e), "SIGKILL");
      killed++;
    } catch {
      // gone, or not ours to read
    }
  }
  return killed;
}
