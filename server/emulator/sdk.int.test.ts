import { Daytona } from "@daytonaio/sdk";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { buildLabels, creationName } from "../providers/labels";
import { RUNNER_STATE_PATH } from "../providers/runner";
import { startTestEmulator, type TestEmulator } from "../test/emulator";

/**
 * Daytona's own TypeScript SDK, unmodified (@daytonaio/sdk 0.218.0), against the emulator
 * (docs/daytona.md, "Daytona's SDK works unmodified against it"): what a user's script or agent tooling calls must work here as on Daytona. Its
 * websocket of sandbox events is off (`useDeprecatedPolling`): the emulator serves no socket.io.
 */

let t: TestEmulator;
let daytona: Daytona;

beforeAll(async () => {
  t = await startTestEmulator(inject("adminUrl"), inject("runPrefix"));
  daytona = new Daytona({ apiKey: "emulator-key", apiUrl: t.emulator.url, useDeprecatedPolling: true });
});

afterAll(async () => {
  await t?.close();
});

describe("Daytona's SDK against the emulator", () => {
  it("gets a sandbox and downloads its files (POST /files/bulk-download, a multipart answer), and names a missing one", async () => {
    const provider = t.provider({ instanceId: "inst-sdk" });
    const made = await provider.create({ name: creationName("sdk", "op-1"), labels: buildLabels({ instanceId: "inst-sdk", companyId: "co-1", operationId: "op-1" }) });
    await t.runner(provider).start(made.id, { runId: "r-sdk", runnerInstanceId: "ri-1", sessionId: "s-1" });
    const home = (await provider.homeDir(made.id))!;

    const sandbox = await daytona.get(made.id);
    expect(sandbox).toMatchObject({ id: made.id, name: made.name, state: "started" });
    const state = await sandbox.fs.downloadFile(`${home}/${RUNNER_STATE_PATH}`);
    expect(JSON.parse(state.toString("utf8"))).toMatchObject({ runId: "r-sdk", sessionId: "s-1" });
    // Several at once, one missing: its own error, the others' bytes.
    const [found, missing] = await sandbox.fs.downloadFiles([{ source: `${home}/${RUNNER_STATE_PATH}` }, { source: `${home}/no such file.txt` }]);
    expect(found?.error).toBeUndefined();
    expect(Buffer.isBuffer(found?.result)).toBe(true);
    expect(missing).toMatchObject({ error: `file not found: ${home}/no such file.txt`, errorDetails: { statusCode: 404, code: "FILE_NOT_FOUND" } });
    await expect(sandbox.fs.downloadFile(`${home}/no such file.txt`)).rejects.toThrow(/file not found/);
  });
});
