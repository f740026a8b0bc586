import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { DaytonaProvider } from "../providers/daytona";
import { buildLabels, creationName, instanceScope } from "../providers/types";
import { startTestEmulator, type TestEmulator } from "../test/emulator";

/**
 * The emulator behaves like Daytona where Runwarden's correctness depends on it
 * (docs/daytona.md), checked over plain HTTP
 * and through the unmodified provider.
 */

let t: TestEmulator;
let provider: DaytonaProvider;
const requests: string[] = [];
const auth = { authorization: "Bearer emulator-key", "content-type": "application/json" };
// Long enough to observe each transitional state over HTTP, short enough for a test.
const TRANSITION_MS = { create: 400, start: 400, stop: 400, destroy: 400 };

beforeAll(async () => {
  t = await startTestEmulator(inject("adminUrl"), inject("runPrefix"), {
    transitionMs: TRANSITION_MS,
    onRequest: (method, path) => requests.push(`${method} ${path}`),
  });
  provider = t.provider({ instanceId: "inst-f" });
});

afterAll(async () => {
  await t?.close();
});

interface Answer {
  status: number;
  body: Record<string, unknown>;
}

async function call(method: string, path: string, body?: unknown): Promise<Answer> {
  const res = await fetch(`${t.emulator.url}${path}`, { method, headers: auth, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

const labels = (op: string) => buildLabels({ instanceId: "inst-f", companyId: "co-1", operationId: op });

async function create(name: string, op = name): Promise<string> {
  const res = await call("POST", "/sandbox", { name, labels: labels(op) });
  expect(res.status).toBe(200);
  return String(res.body.id);
}

async function waitState(id: string, state: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const now = (await call("GET", `/sandbox/${id}`)).body.state;
    if (now === state) return;
    if (Date.now() > deadline) throw new Error(`${id} is ${String(now)}, never ${state}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("Daytona fidelity of the emulator", () => {
  it("create waits server-side for started and answers the DTO it created (creating) (Daytona v0.190.0 sandbox.controller.ts, waitForSandboxStarted(…, 30))", async () => {
    const t0 = Date.now();
    const res = await call("POST", "/sandbox", { name: "fid-create-wait", labels: labels("fid-create-wait") });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(TRANSITION_MS.create - 50);
    expect(res.body).toMatchObject({ state: "creating", desiredState: "started" });
    expect((await call("GET", `/sandbox/${String(res.body.id)}`)).body).toMatchObject({ state: "started" });
  });

  it("past its server-side wait, create answers creating, then started after the delay; toolbox calls need started; the provider waits for it", async () => {
    await t.admin.configure({ serverWaitMs: 0 });
    try {
      await createAnswersBeforeStarted();
    } finally {
      await t.admin.configure({ serverWaitMs: 30_000 });
    }
  });

  async function createAnswersBeforeStarted() {
    const id = await create("fid-create");
    expect((await call("GET", `/sandbox/${id}`)).body).toMatchObject({ state: "creating", desiredState: "started" });
    const early = await call("GET", `/toolbox/${id}/version`);
    expect(early.status).toBe(400);
    expect(early.body).toMatchObject({ statusCode: 400, code: "bad_request", message: expect.stringMatching(/Is the Sandbox started\?/) });
    await waitState(id, "started");
    expect((await call("GET", `/toolbox/${id}/version`)).status).toBe(200);

    // Through the provider: the first toolbox call right after create waits for `started`.
    const created = await provider.create({ name: creationName("fid", "op-wait"), labels: labels("op-wait") });
    expect(created.state).toBe("creating");
    const home = await provider.homeDir(created.id);
    expect(home).toMatch(/\/home$/);
    expect((await provider.getById(created.id))?.state).toBe("started");
  }

  it("delete renames to DESTROYED_<name>_<ms> and goes through destroying; by name 404 at once; a second delete is 409", async () => {
    const id = await create("fid-delete");
    await waitState(id, "started");
    const before = Date.now();
    const deleted = await call("DELETE", `/sandbox/${id}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toMatchObject({ id, state: "destroying", desiredState: "destroyed" });
    const m = /^DESTROYED_fid-delete_(\d+)$/.exec(String(deleted.body.name));
    expect(m).not.toBeNull();
    expect(Number(m?.[1])).toBeGreaterThanOrEqual(before);
    expect(Number(m?.[1])).toBeLessThanOrEqual(Date.now());

    expect((await call("GET", "/sandbox/fid-delete")).status).toBe(404);
    expect((await call("GET", `/sandbox/${id}`)).body).toMatchObject({ state: "destroying" });
    const again = await call("DELETE", `/sandbox/${id}`);
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ statusCode: 409, error: "Conflict", message: "Sandbox state change in progress" });
    expect(again.body).not.toHaveProperty("code");
    // The provider takes that 409 as "already gone".
    expect(await provider.destroy(id)).toEqual({ outcome: "already_gone" });

    // The name is free at once; the old one is never listed once destroyed.
    await create("fid-delete", "fid-delete-2");
    // Once destroying is over, the old sandbox is gone by id too.
    await expect.poll(async () => (await call("GET", `/sandbox/${id}`)).status, { timeout: TRANSITION_MS.destroy + 5_000, interval: 20 }).toBe(404);
    const listed = await call("GET", `/sandbox?labels=${encodeURIComponent(JSON.stringify(labels("fid-delete")))}`);
    expect(listed.body.items).toEqual([]);
  });

  it("answers REST errors in Daytona's shape (statusCode, error, message, path, timestamp; no code)", async () => {
    const missing = await call("GET", "/sandbox/fid-nobody");
    expect(missing).toEqual({
      status: 404,
      body: { path: "/sandbox/fid-nobody", timestamp: expect.any(String), statusCode: 404, error: "Not Found", message: "Sandbox with ID or name fid-nobody not found" },
    });
    await create("fid-dup");
    const dup = await call("POST", "/sandbox", { name: "fid-dup", labels: labels("fid-dup") });
    expect(dup.status).toBe(409);
    expect(Object.keys(dup.body).sort()).toEqual(["error", "message", "path", "statusCode", "timestamp"]);
    expect((await call("GET", "/sandbox?labels=not-json")).body).toMatchObject({ statusCode: 400, error: "Bad Request" });
  });

  it("lists by last activity unless asked for createdAt asc; name and id filters are prefixes; the provider asks for creation order", async () => {
    const op = "fid-order";
    const ids = [await create("fid-order-a", op), await create("fid-order-b", op), await create("fid-order-c", op)];
    for (const id of ids) await waitState(id, "started");
    // Activity on the oldest one moves it to the front of the default order. A sleep on
    // purpose: the clock must move past the last creation (millisecond timestamps).
    await new Promise((r) => setTimeout(r, 5));
    expect((await call("GET", `/toolbox/${ids[0]}/version`)).status).toBe(200);
    const q = `labels=${encodeURIComponent(JSON.stringify(labels(op)))}`;
    const names = (a: Answer) => (a.body.items as { name: string }[]).map((s) => s.name);
    expect(names(await call("GET", `/sandbox?${q}`))).toEqual(["fid-order-a", "fid-order-c", "fid-order-b"]);
    expect(names(await call("GET", `/sandbox?${q}&sort=createdAt&order=asc`))).toEqual(["fid-order-a", "fid-order-b", "fid-order-c"]);

    // Paging in the default order with Daytona's cursor (base64 of {sortValue, id}).
    const first = await call("GET", `/sandbox?${q}&limit=2`);
    const cursor = String(first.body.nextCursor);
    expect(JSON.parse(Buffer.from(cursor, "base64").toString("utf8"))).toMatchObject({ id: ids[2], sortValue: expect.any(String) });
    expect(names(await call("GET", `/sandbox?${q}&limit=2&cursor=${encodeURIComponent(cursor)}`))).toEqual(["fid-order-b"]);
    expect((await call("GET", `/sandbox?${q}&cursor=nonsense`)).status).toBe(400);

    expect(names(await call("GET", `/sandbox?name=fid-order-&sort=createdAt&order=asc`))).toEqual(["fid-order-a", "fid-order-b", "fid-order-c"]);
    expect(names(await call("GET", `/sandbox?name=fid-order-b`))).toEqual(["fid-order-b"]);
    expect(names(await call("GET", `/sandbox?id=${String(ids[1]).slice(0, 13)}`))).toEqual(["fid-order-b"]);

    requests.length = 0;
    const paged = t.provider({ instanceId: "inst-f", pageSize: 2 });
    const listed = await paged.listByLabels({ ...instanceScope("inst-f"), "runwarden.operation": op });
    expect(listed.map((s) => s.name)).toEqual(["fid-order-a", "fid-order-b", "fid-order-c"]);
    const lists = requests.filter((r) => r.startsWith("GET /sandbox?"));
    expect(lists).toHaveLength(2);
    for (const r of lists) expect(r).toMatch(/[?&]sort=createdAt&order=asc/);
  });

  it("refuses toolbox and file calls on a stopped sandbox with 400, and reaches the toolbox by id only", async () => {
    const id = await create("fid-stopped");
    await waitState(id, "started");
    // By name the proxy finds no container.
    expect((await call("GET", "/toolbox/fid-stopped/version")).status).toBe(404);
    expect((await call("POST", `/sandbox/${id}/stop`)).status).toBe(200);
    await waitState(id, "stopped");
    const form = new FormData();
    form.append("files[0].path", "x.txt");
    form.append("files[0].file", new Blob(["x"]), "x.txt");
    const upload = await fetch(`${t.emulator.url}/toolbox/${id}/files/bulk-upload`, { method: "POST", headers: { authorization: auth.authorization }, body: form });
    const answers = [
      (await call("POST", `/toolbox/${id}/process/execute`, { command: "echo hi" })).status,
      (await call("GET", `/toolbox/${id}/files/download?path=x.txt`)).status,
      upload.status,
      (await call("GET", `/toolbox/${id}/user-home-dir`)).status,
    ];
    expect(answers).toEqual([400, 400, 400, 400]);
  });

  it("start and stop pass through starting and stopping and refuse (409) while changing (past the start's server-side wait)", async () => {
    await t.admin.configure({ serverWaitMs: 0 });
    try {
      await lifecycle();
    } finally {
      await t.admin.configure({ serverWaitMs: 30_000 });
    }
    // Within it, a start answers once the sandbox is started.
    const id = await create("fid-life-wait");
    await waitState(id, "started");
    await provider.stop(id);
    expect((await call("POST", `/sandbox/${id}/start`)).body).toMatchObject({ state: "started" });
  });

  async function lifecycle() {
    const id = await create("fid-life");
    // Still creating: no lifecycle change.
    expect((await call("POST", `/sandbox/${id}/stop`)).status).toBe(409);
    await waitState(id, "started");
    const stopping = await call("POST", `/sandbox/${id}/stop`);
    expect(stopping.body).toMatchObject({ state: "stopping", desiredState: "stopped" });
    expect((await call("POST", `/sandbox/${id}/start`)).status).toBe(409);
    expect((await call("POST", `/sandbox/${id}/stop`)).status).toBe(409);
    await waitState(id, "stopped");
    // Stopping a sandbox that is not started is refused.
    expect((await call("POST", `/sandbox/${id}/stop`)).status).toBe(400);
    const starting = await call("POST", `/sandbox/${id}/start`);
    expect(starting.body).toMatchObject({ state: "starting", desiredState: "started" });
    expect((await call("POST", `/sandbox/${id}/stop`)).status).toBe(409);
    expect((await call("DELETE", `/sandbox/${id}`)).status).toBe(409);
    await waitState(id, "started");
    // The provider's stop and start wait for the end of the transition.
    expect((await provider.stop(id)).state).toBe("stopped");
    expect((await provider.start(id)).state).toBe("started");
  }

  it("archive (daytonaio/daytona v0.190.0 sandbox.service.ts start(), sandbox.entity.ts autoArchiveInterval): a stopped sandbox is archived after its autoArchiveInterval; a start restores it, showing archived (desired started) meanwhile; error states do not start", async () => {
    await t.admin.configure({ autoStopMinuteMs: 200 });
    try {
      const res = await call("POST", "/sandbox", { name: "fid-archive", labels: labels("fid-archive"), autoArchiveInterval: 1 });
      expect(res.body).toMatchObject({ autoArchiveInterval: 1 });
      const id = String(res.body.id);
      await waitState(id, "started");
      await call("POST", `/sandbox/${id}/stop`);
      await waitState(id, "stopped");
      // One (emulated) minute stopped: archiving, then archived.
      await waitState(id, "archived", 10_000);
      expect((await call("GET", `/sandbox/${id}`)).body).toMatchObject({ state: "archived", desiredState: "archived" });
      // Toolbox calls need started.
      expect((await call("GET", `/toolbox/${id}/user-home-dir`)).status).toBe(400);
      const starting = await call("POST", `/sandbox/${id}/start`);
      expect(starting.body).toMatchObject({ state: "archived", desiredState: "started" });
      // A second start meanwhile is a state change in progress.
      expect((await call("POST", `/sandbox/${id}/start`)).status).toBe(409);
      await waitState(id, "started");
      // The provider does it in one call, from archived as from stopped.
      await call("POST", `/sandbox/${id}/stop`);
      await waitState(id, "stopped");
      await t.admin.setState(id, "archived");
      const up = await provider.ensureStarted(id);
      expect(up).toMatchObject({ outcome: "restarted", before: "archived", sandbox: { state: "started" } });
      // Only a stopped sandbox can be archived by hand, as in Daytona.
      await expect(t.admin.setState(id, "archived")).rejects.toThrow(/only a stopped sandbox/);
    } finally {
      await t.admin.configure({ autoStopMinuteMs: 60_000 });
    }
  });

  it("auto-delete (daytonaio/daytona v0.190.0 sandbox.entity.ts autoDeleteInterval, sandbox.manager.ts autoDeleteCheck, sandbox.service.ts stop()): a sandbox stopped for its autoDeleteInterval is deleted; -1 (the default) never; 0 deletes at stop; the provider sends both intervals", async () => {
    await t.admin.configure({ autoStopMinuteMs: 200 });
    try {
      const made = async (name: string, extra: Record<string, number>) => {
        const res = await call("POST", "/sandbox", { name, labels: labels(name), ...extra });
        await waitState(String(res.body.id), "started");
        return res;
      };
      const timed = await made("fid-autodelete", { autoDeleteInterval: 1 });
      const kept = await made("fid-autodelete-never", {});
      expect(timed.body).toMatchObject({ autoDeleteInterval: 1 });
      expect(kept.body).toMatchObject({ autoDeleteInterval: -1 });
      const [a, b] = [String(timed.body.id), String(kept.body.id)];
      await call("POST", `/sandbox/${a}/stop`);
      await call("POST", `/sandbox/${b}/stop`);
      await waitState(a, "stopped");
      await waitState(b, "stopped");
      const stoppedAt = Date.now();
      // One (emulated) minute stopped: destroying, then gone (a 404 by id once destroyed).
      const deadline = Date.now() + 10_000;
      let last = await call("GET", `/sandbox/${a}`);
      while (last.status === 200 && last.body.state !== "destroyed" && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 20));
        last = await call("GET", `/sandbox/${a}`);
      }
      expect(Date.now() - stoppedAt).toBeGreaterThanOrEqual(150);
      expect(last.status === 404 || last.body.state === "destroyed").toBe(true);
      expect(await provider.getByName("fid-autodelete")).toBeNull();
      // -1: still there, stopped, a good while later.
      expect((await call("GET", `/sandbox/${b}`)).body).toMatchObject({ state: "stopped", desiredState: "stopped" });

      // 0 (ephemeral): the stop itself deletes it.
      const eph = await made("fid-ephemeral", { autoDeleteInterval: 0 });
      const stop = await call("POST", `/sandbox/${String(eph.body.id)}/stop`);
      expect(stop.body).toMatchObject({ desiredState: "destroyed" });
      expect(await provider.getByName("fid-ephemeral")).toBeNull();

      // The provider sends both (server/providers/daytona.ts create) and they read back.
      const name = creationName("fid", "idle-policy");
      const view = await provider.create({ name, labels: labels("idle-policy"), autoStopInterval: 37, autoDeleteInterval: 1440 });
      expect((await call("GET", `/sandbox/${view.id}`)).body).toMatchObject({ autoStopInterval: 37, autoDeleteInterval: 1440 });
    } finally {
      await t.admin.configure({ autoStopMinuteMs: 60_000 });
    }
  });

  it.each(["error", "build_failed"] as const)("%s (with its reason): start is refused with 400, and the provider says why", async (state) => {
    const id = await create(`fid-${state}`);
    await waitState(id, "started");
    await t.admin.setState(id, state, "disk quota exceeded");
    expect((await call("GET", `/sandbox/${id}`)).body).toMatchObject({ state, errorReason: "disk quota exceeded" });
    expect(await call("POST", `/sandbox/${id}/start`)).toMatchObject({ status: 400, body: { message: "Sandbox is not in valid state" } });
    await expect(provider.ensureStarted(id)).rejects.toThrow(`sandbox ${id} is ${state}: it cannot be started (disk quota exceeded)`);
  });

  it("a deleted sandbox's toolbox (Daytona v0.190.0 apps/proxy/pkg/proxy/get_sandbox_target.go, auth.go): 404 while the proxy's caches last, then 401 or 400; the provider and the runner still see it gone", async () => {
    await t.admin.configure({ toolboxGone: { afterMs: 300, status: 401 } });
    try {
      const id = await create("fid-gone");
      await waitState(id, "started");
      const runner = t.runner(provider);
      // Caches its toolbox URL and home, as a controller working on it has.
      expect(await provider.readFile(id, "nothing-here.txt")).toBeNull();
      expect((await runner.process(id)).state).toBe("absent");
      await provider.destroy(id);
      expect((await call("GET", `/toolbox/${id}/user-home-dir`)).status).toBe(404);
      await new Promise((r) => setTimeout(r, 400));
      expect(await call("GET", `/toolbox/${id}/user-home-dir`)).toMatchObject({ status: 401, body: { message: "Bearer token is invalid" } });
      // Through the cached URL: gone, not an error (a read of a gone sandbox is no file, §EVIDENCE).
      expect(await provider.readFile(id, "nothing-here.txt")).toBeNull();
      await expect(runner.process(id)).rejects.toMatchObject({ status: 404, code: "sandbox_not_found" });
      await t.admin.configure({ toolboxGone: { status: 400 } });
      expect(await call("GET", `/toolbox/${id}/user-home-dir`)).toMatchObject({ status: 400, body: { message: expect.stringContaining("failed to get runner info") } });
      expect(await provider.readFile(id, "/etc/hostname")).toBeNull();
    } finally {
      await t.admin.configure({ toolboxGone: { afterMs: 120_000, status: 401 } });
    }
  });

  it("a stopped sandbox's toolbox 400 stays an error: it is there, only not started", async () => {
    const id = await create("fid-stopped-400");
    await waitState(id, "started");
    expect(await provider.readFile(id, "nothing-here.txt")).toBeNull();
    await provider.stop(id);
    await expect(provider.readFile(id, "nothing-here.txt")).rejects.toThrow(/HTTP 400/);
  });

  it("slow_start: a create slower than the server-side wait answers creating when the wait is over; one that fails meanwhile answers 400 while the sandbox exists and holds its name", async () => {
    await t.admin.configure({ serverWaitMs: 300 });
    try {
      await t.admin.setFault({ match: { name: "fid-slow" }, fault: { kind: "slow_start", ms: 1_000 }, times: 1 });
      const t0 = Date.now();
      const slow = await call("POST", "/sandbox", { name: "fid-slow", labels: labels("fid-slow") });
      const waited = Date.now() - t0;
      expect(slow).toMatchObject({ status: 200, body: { state: "creating" } });
      expect(waited).toBeGreaterThanOrEqual(250);
      expect(waited).toBeLessThan(1_000);
      await waitState(String(slow.body.id), "started");

      await t.admin.setFault({ match: { name: "fid-fails" }, fault: { kind: "slow_start", ms: 100, outcome: "error", errorReason: "no space left on device" }, times: 1 });
      const failed = await call("POST", "/sandbox", { name: "fid-fails", labels: labels("fid-fails") });
      expect(failed).toMatchObject({ status: 400, body: { message: "Sandbox failed to start: no space left on device" } });
      const kept = await provider.getByName("fid-fails");
      expect(kept).toMatchObject({ state: "error", errorReason: "no space left on device" });
      // The name is taken: a second create under it is refused.
      expect((await call("POST", "/sandbox", { name: "fid-fails", labels: labels("fid-fails") })).status).toBe(409);
    } finally {
      await t.admin.configure({ serverWaitMs: 30_000 });
    }
  });

  it("a lookup by name's 'not found' is cached (Daytona v0.190.0 utils/sandbox-lookup-cache.util.ts, 10 s) and the list lags (lookupCacheMs, listLagMs); the provider sees both", async () => {
    await t.admin.configure({ lookupCacheMs: 4_000, listLagMs: 4_000 });
    try {
      expect(await provider.getByName("fid-cached")).toBeNull();
      const id = await create("fid-cached");
      // Created, and still "not found" by name while the miss is cached; by id it is there.
      expect(await provider.getByName("fid-cached")).toBeNull();
      expect((await provider.getById(id))?.name).toBe("fid-cached");
      expect((await provider.listByLabels(instanceScope("inst-f"))).map((s) => s.id)).not.toContain(id);
      await new Promise((r) => setTimeout(r, 4_100));
      expect((await provider.getByName("fid-cached"))?.id).toBe(id);
      expect((await provider.listByLabels(instanceScope("inst-f"))).map((s) => s.id)).toContain(id);
    } finally {
      await t.admin.configure({ lookupCacheMs: 0, listLagMs: 0 });
    }
  });
});

