import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { childEnv } from "../env";
import { DaytonaProvider } from "../providers/daytona";
import { createRunnerClient } from "../providers/runner";
import { buildLabels, creationName, instanceScope } from "../providers/types";
import { EmulatorAdminClient } from "./admin-client";
import { createThrowawayDatabase, type ThrowawayDatabase } from "./testing";

/**
 * `scripts/emulator.ts` as a real child process: its sandboxes, runner states, fault
 * rules and even a late materialisation in flight survive its SIGKILL and restart.
 */

const root = path.resolve(import.meta.dirname, "../..");
let database: ThrowawayDatabase;
let port: number;
let child: ChildProcess | null = null;

async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  const p = (srv.address() as net.AddressInfo).port;
  await new Promise((r) => srv.close(r));
  return p;
}

/** Starts the emulator script in its own process group; resolves with the URL it prints. */
function startChild(): Promise<string> {
  const adminUrl = inject("adminUrl");
  const proc = spawn(process.execPath, [path.join(root, "node_modules/tsx/dist/cli.mjs"), "scripts/emulator.ts"], {
    cwd: root,
    env: childEnv({ EMULATOR_PORT: String(port), DATABASE_URL: adminUrl, EMULATOR_DATABASE: database.name, EMULATOR_URL: undefined }),
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  child = proc;
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

/** SIGKILL to the whole group: tsx's wrapper and the emulator process under it. */
async function killChild(signal: NodeJS.Signals): Promise<void> {
  const proc = child;
  if (!proc?.pid || proc.exitCode !== null || proc.signalCode !== null) return;
  const exited = new Promise((r) => proc.once("exit", r));
  process.kill(-proc.pid, signal);
  await exited;
  child = null;
}

beforeAll(async () => {
  database = await createThrowawayDatabase(inject("adminUrl"), inject("runPrefix"), "emukill");
  port = await freePort();
});

afterAll(async () => {
  await killChild("SIGKILL");
  await database?.drop();
});

async function waitUntilRefused(url: string): Promise<void> {
  for (let i = 0; i < 50; i++) {
    const ok = await fetch(`${url}/health`).then(
      () => true,
      () => false,
    );
    if (!ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error("the killed emulator still answers");
}

describe("emulator as a separate process", () => {
  it("keeps sandboxes, runner state, faults and a late create across its own SIGKILL", async () => {
    const url = await startChild();
    expect(url).toBe(`http://127.0.0.1:${port}`);
    const provider = new DaytonaProvider({ apiUrl: url, apiKey: "emulator-key", timeoutMs: 5000, instanceId: "inst-k" });
    const runner = createRunnerClient({ apiKey: "emulator-key", toolboxUrl: (id) => provider.toolboxUrl(id) });
    const admin = new EmulatorAdminClient(url);
    const labels = (op: string) => buildLabels({ instanceId: "inst-k", companyId: "co-1", operationId: op });

    const created = [];
    for (const op of ["op-k1", "op-k2", "op-k3"]) created.push(await provider.create({ name: creationName("rw", op), labels: labels(op) }));
    const first = created[0];
    if (!first) throw new Error("no sandbox");
    await runner.start(first.id, { runId: "r-k", runnerInstanceId: "ri-k", sessionId: "s-k" });
    await admin.setFault({ match: { name: "rw-create-op-k3" }, fault: { kind: "latency", ms: 250 } });

    // A create whose caller gives up, materialising 2 s after it arrived…
    const lateName = creationName("rw", "op-late-k");
    await admin.setFault({ match: { name: lateName }, fault: { kind: "late", delayMs: 2000 }, times: 1 });
    const abort = new AbortController();
    setTimeout(() => abort.abort(), 200);
    await expect(provider.create({ name: lateName, labels: labels("op-late-k"), signal: abort.signal })).rejects.toMatchObject({ kind: "aborted" });
    const killedAt = Date.now();

    // …and the emulator is SIGKILLed while it is still pending.
    await killChild("SIGKILL");
    await waitUntilRefused(url);
    await expect(provider.getByName("rw-create-op-k1")).rejects.toMatchObject({ kind: "unreachable" });

    const again = await startChild();
    expect(again).toBe(url);
    const listed = await provider.listByLabels(instanceScope("inst-k"));
    const ids = listed.map((s) => s.id);
    expect(ids).toEqual(expect.arrayContaining(created.map((s) => s.id)));

    const state = await runner.readState(first.id);
    expect(state).toMatchObject({ runId: "r-k", runnerInstanceId: "ri-k", lifecycle: "connecting" });
    // The emulated runner process outlives the emulator process, like a real sandbox's would.
    expect((await runner.process(first.id)).state).toBe("running");
    // Stopping the sandbox ends its processes, the detached runner included.
    const pid = state?.process?.pid;
    await provider.stop(first.id);
    expect(pid !== undefined && fs.existsSync(`/proc/${pid}`) && !fs.readFileSync(`/proc/${pid}/stat`, "utf8").includes(") Z ")).toBe(false);
    expect((await admin.faults()).map((f) => f.fault.kind)).toContain("latency");

    const lateFound = await pollFor(() => provider.getByName(lateName), 10_000);
    expect(lateFound?.labels).toEqual(labels("op-late-k"));
    expect(Date.now() - killedAt).toBeGreaterThanOrEqual(1000);

    await killChild("SIGTERM");
    // The runner was started by the first emulator process and outlived it: it must not outlive the test.
  }, 90_000);
});

async function pollFor<T>(fn: () => Promise<T | null>, timeoutMs: number): Promise<T | null> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== null || Date.now() > deadline) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
}
