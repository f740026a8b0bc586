import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { startTestEmulator, type TestEmulator } from "../test/emulator";
import { DaytonaProvider } from "./daytona";
import { readRunnerState, RUNNER_STATE_PATH } from "./runner";
import { buildLabels, creationName, hourlyCost, instanceScope, normaliseLabels, ProviderError } from "./types";

/** The Daytona provider, unchanged, against the in-process emulator. */

let t: TestEmulator;
let provider: DaytonaProvider;

beforeAll(async () => {
  t = await startTestEmulator(inject("adminUrl"), inject("runPrefix"));
  provider = t.provider({ instanceId: "inst-a" });
});

afterAll(async () => {
  await t?.close();
});

const labelsFor = (op: string, instanceId = "inst-a", companyId = "co-1") => buildLabels({ instanceId, companyId, operationId: op });

describe("Daytona provider against the emulator", () => {
  it("creates a sandbox by exact name with labels and finds it by that name", async () => {
    const name = creationName("rw", "op-create");
    const created = await provider.create({ name, labels: labelsFor("op-create") });
    // Daytona answers `creating`; it is `started` a moment later.
    expect(created).toMatchObject({ name, state: "creating", cpu: 1, memory: 1, disk: 3 });
    expect(normaliseLabels(created.labels)).toEqual({ instance: "inst-a", company: "co-1", operation: "op-create" });
    expect(created.hourlyCost).toBe(hourlyCost({ cpu: 1, memory: 1, disk: 3 }));
    expect(created.ageSeconds).toBeGreaterThanOrEqual(0);
    expect(created.toolboxProxyUrl).toBe(`${t.emulator.url}/toolbox`);

    const found = await provider.getByName(name, { now: new Date(Date.parse(created.createdAt) + 90_500) });
    expect(found?.id).toBe(created.id);
    expect(found?.ageSeconds).toBe(90);
    expect(await provider.getByName(creationName("rw", "op-never-created"))).toBeNull();
  });

  it("sizes a sandbox as asked and prices it", async () => {
    const created = await provider.create({ name: "rw-create-op-big", labels: labelsFor("op-big"), cpu: 4, memory: 8, disk: 10 });
    expect(created).toMatchObject({ cpu: 4, memory: 8, disk: 10 });
    expect(created.hourlyCost).toBeCloseTo(4 * 0.0504 + 8 * 0.0162 + 10 * 0.000108, 6);
  });

  it("answers a duplicate name with a 409 ProviderError", async () => {
    await provider.create({ name: "rw-create-op-dup", labels: labelsFor("op-dup") });
    await expect(provider.create({ name: "rw-create-op-dup", labels: labelsFor("op-dup") })).rejects.toMatchObject({
      kind: "http",
      status: 409,
      code: null,
    });
  });

  it("lists only this instance's sandboxes, across pages, never another instance's", async () => {
    const other = t.provider({ instanceId: "inst-b" });
    const mine = ["op-l1", "op-l2", "op-l3", "op-l4", "op-l5"];
    for (const op of mine) await provider.create({ name: creationName("rwl", op), labels: { ...labelsFor(op), "runwarden.run": "run-list" } });
    await other.create({ name: creationName("rwl", "op-theirs"), labels: { ...labelsFor("op-theirs", "inst-b"), "runwarden.run": "run-list" } });
    // A decoy planted with the same company and run but no instance label at all.
    await t.admin.plant({ name: "decoy-no-instance", labels: { "runwarden.company": "co-1", "runwarden.run": "run-list" } });

    const paged = t.provider({ instanceId: "inst-a", pageSize: 2 });
    const listed = await paged.listByLabels({ ...instanceScope("inst-a"), "runwarden.run": "run-list" });
    expect(listed.map((s) => s.name).sort()).toEqual(mine.map((op) => creationName("rwl", op)).sort());
    expect(listed.every((s) => s.labels["runwarden.instance"] === "inst-a")).toBe(true);
    // Page by page: the provider's pages as they come, the same sandboxes, each once.
    const pages: string[][] = [];
    for await (const page of paged.listPagesByLabels({ ...instanceScope("inst-a"), "runwarden.run": "run-list" })) pages.push(page.map((s) => s.name));
    expect(pages.map((p) => p.length)).toEqual([2, 2, 1]);
    expect(pages.flat().sort()).toEqual(mine.map((op) => creationName("rwl", op)).sort());

    const theirs = await other.listByLabels({ ...instanceScope("inst-b"), "runwarden.run": "run-list" });
    expect(theirs.map((s) => s.name)).toEqual([creationName("rwl", "op-theirs")]);

    // Another company of the same instance is a narrower scope, still by labels.
    await provider.create({ name: "rwl-create-op-co2", labels: labelsFor("op-co2", "inst-a", "co-2") });
    const co2 = await provider.listByLabels(instanceScope("inst-a", "co-2"));
    expect(co2.map((s) => s.name)).toEqual(["rwl-create-op-co2"]);
  });

  it("refuses an empty or instance-less label set", async () => {
    await expect(provider.listByLabels({})).rejects.toMatchObject({ kind: "refused" });
    await expect(provider.listByLabels({ "runwarden.company": "co-1" })).rejects.toMatchObject({ kind: "refused" });
    await expect(provider.listByLabels(instanceScope("inst-b"))).rejects.toMatchObject({ kind: "refused" });
    await expect(provider.listPagesByLabels(instanceScope("inst-b")).next()).rejects.toMatchObject({ kind: "refused" });
  });

  it("destroys a sandbox; destroying it again, or an unknown id, is already_gone", async () => {
    const created = await provider.create({ name: "rw-create-op-destroy", labels: labelsFor("op-destroy") });
    expect(await provider.destroy(created.id)).toEqual({ outcome: "destroyed" });
    expect(await provider.getByName("rw-create-op-destroy")).toBeNull();
    expect(await provider.destroy(created.id)).toEqual({ outcome: "already_gone" });
    expect(await provider.destroy("00000000-0000-4000-8000-000000000000")).toEqual({ outcome: "already_gone" });
    // Listed while `destroying` (as Daytona does), never once `destroyed`.
    const listed = await provider.listByLabels({ ...instanceScope("inst-a"), "runwarden.operation": "op-destroy" });
    expect(listed.every((s) => s.state === "destroying" && s.name.startsWith("DESTROYED_rw-create-op-destroy_"))).toBe(true);
    // The name is free again at once (the deleted one was renamed).
    await expect(provider.create({ name: "rw-create-op-destroy", labels: labelsFor("op-destroy") })).resolves.toMatchObject({ state: "creating" });
  });

  it("keeps a destroyed sandbox visible by id as destroyed for the configured retention", async () => {
    await t.admin.configure({ destroyedRetentionMs: 60_000 });
    let id = "";
    try {
      const created = await provider.create({ name: "rw-create-op-retained", labels: labelsFor("op-retained") });
      id = created.id;
      expect((await provider.destroy(created.id)).outcome).toBe("destroyed");
      expect(await provider.getByName("rw-create-op-retained")).toBeNull();
      await expect.poll(async () => (await provider.getById(id))?.state, { timeout: 5000, interval: 25 }).toBe("destroyed");
      expect((await provider.destroy(created.id)).outcome).toBe("already_gone");
      expect(await provider.listByLabels({ ...instanceScope("inst-a"), "runwarden.operation": "op-retained" })).toEqual([]);
    } finally {
      await t.admin.configure({ destroyedRetentionMs: 0 });
    }
    expect(await provider.getById(id)).toBeNull();
  });

  it("reads a file inside a sandbox; a missing file or sandbox is null", async () => {
    const planted = await t.admin.plant({
      name: "rw-create-op-file",
      labels: labelsFor("op-file"),
      files: { "notes.txt": "héllo\nworld", "work/relative.txt": "rel" },
    });
    // Paths come from the sandbox's own home, never a hard-coded one.
    const home = await provider.homeDir(planted.id);
    expect(await provider.readFile(planted.id, `${home}/notes.txt`)).toBe("héllo\nworld");
    expect(await provider.readFile(planted.id, "work/relative.txt")).toBe("rel");
    expect(await provider.readFile(planted.id, "/nope")).toBeNull();
    expect(await provider.readFile("00000000-0000-4000-8000-000000000000", "/nope")).toBeNull();
  });

  it("reads the runner state written by the emulated runner", async () => {
    const created = await provider.create({ name: "rw-create-op-runner", labels: labelsFor("op-runner") });
    expect(await readRunnerState(provider, created.id)).toBeNull();
    await t.runner(provider).start(created.id, { runId: "r1", runnerInstanceId: "ri-1", sessionId: "s-1" });
    const text = await provider.readFile(created.id, RUNNER_STATE_PATH);
    expect(JSON.parse(text ?? "null")).toMatchObject({ runId: "r1", lifecycle: "connecting" });
    expect(await readRunnerState(provider, created.id)).toMatchObject({ runnerInstanceId: "ri-1", lastConnectionProtocolVersion: null });
  });

  it("stops and starts a sandbox by id; the runner process ends with the stop", async () => {
    const created = await provider.create({ name: "rw-create-op-stop", labels: labelsFor("op-stop") });
    const runner = t.runner(provider);
    await runner.start(created.id, { runId: "r-stop", runnerInstanceId: "ri-1", sessionId: "s-1" });
    expect((await provider.stop(created.id)).state).toBe("stopped");
    // Toolbox calls on a stopped sandbox are refused (Daytona: 400 "Is the Sandbox started?").
    await expect(runner.process(created.id)).rejects.toMatchObject({ status: 400 });
    expect((await provider.start(created.id)).state).toBe("started");
    expect((await runner.process(created.id)).state).toBe("stopped");
  });

  it("rejects a wrong API key with a 401", async () => {
    const wrong = new DaytonaProvider({ apiUrl: t.emulator.url, apiKey: "not-the-key", timeoutMs: 5000 });
    const err = await wrong.getByName("anything").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProviderError);
    expect(err).toMatchObject({ kind: "http", status: 401, code: null });
  });
});
