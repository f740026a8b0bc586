import fs from "node:fs";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { DaytonaProvider } from "../providers/daytona";
import { createRunnerClient } from "../providers/runner";
import { buildLabels, creationName, instanceScope } from "../providers/types";
import { EmulatorAdminClient } from "./admin-client";
import { EmulatorChild, freePort } from "../test/emulator-child";
import { createThrowawayDatabase, type ThrowawayDatabase } from "../test/emulator";

/**
 * `scripts/emulator.ts` as a real child process: its sandboxes, runner states, fault
 * rules and even a late materialisation in flight survive its SIGKILL and restart.
 */

let database: ThrowawayDatabase;
let port: number;
let emulator: EmulatorChild | null = null;

beforeAll(async () => {
  database = await createThrowawayDatabase(inject("adminUrl"), inject("runPrefix"), "emukill");
  port = await freePort();
  emulator = new EmulatorChild({ port, adminUrl: inject("adminUrl"), database: database.name });
});

afterAll(async () => {
  await emulator?.kill("SIGKILL");
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
    const url = await emulator!.start();
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
    const pending = provider.create({ name: lateName, labels: labels("op-late-k"), signal: abort.signal });
    // The caller gives up once the emulator holds the create, not after a guessed 200 ms.
    await expect.poll(async () => (await admin.sandboxes()).some((s) => s.name === lateName), { timeout: 5_000, interval: 20 }).toBe(true);
    abort.abort();
    await expect(pending).rejects.toMatchObject({ kind: "aborted" });
    const killedAt = Date.now();

    // …and the emulator is SIGKILLed while it is still pending.
    await emulator?.kill("SIGKILL");
    await waitUntilRefused(url);
    await expect(provider.getByName("rw-create-op-k1")).rejects.toMatchObject({ kind: "unreachable" });

    const again = await emulator!.start();
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

    await emulator?.kill("SIGTERM");
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
