import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { providerFromEnv } from "../providers/from-env";
import { readEnv } from "../env";
import { startTestEmulator, type TestEmulator } from "../test/emulator";

/** The emulator's REST surface as plain HTTP (what curl and other clients see). */

let t: TestEmulator;
const auth = { authorization: "Bearer emulator-key", "content-type": "application/json" };

beforeAll(async () => {
  t = await startTestEmulator(inject("adminUrl"), inject("runPrefix"), { apiKeys: ["emulator-key", "second-key"] });
});

afterAll(async () => {
  await t?.close();
});

async function waitState(id: string, state: string) {
  for (let i = 0; i < 100; i++) {
    if ((await call("GET", `/sandbox/${id}`)).body.state === state) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`${id} never became ${state}`);
}

async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = auth) {
  const res = await fetch(`${t.emulator.url}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe("emulator REST surface", () => {
  it("answers health without a key and everything else only with a configured Bearer key", async () => {
    expect(await call("GET", "/health", undefined, {})).toEqual({ status: 200, body: { ok: true } });
    // Daytona's REST errors: {path, timestamp, statusCode, error, message}, no `code` (docs/daytona.md, "Errors and rate limits").
    const missing = await call("GET", "/sandbox", undefined, {});
    expect(missing).toEqual({
      status: 401,
      body: { path: "/sandbox", timestamp: expect.any(String), statusCode: 401, error: "Unauthorized", message: "Missing Authorization: Bearer <API key>" },
    });
    expect((await call("GET", "/sandbox", undefined, { authorization: "Bearer wrong" })).status).toBe(401);
    expect((await call("GET", "/sandbox", undefined, { authorization: "Bearer second-key" })).status).toBe(200);
  });

  it("checks the key before reading the path, and answers malformed percent-encoding with 400", async () => {
    expect((await call("GET", "/sandbox/%E0%A4%A", undefined, {})).status).toBe(401);
    expect((await call("GET", "/sandbox/%ff", undefined, { authorization: "Bearer wrong" })).status).toBe(401);
    expect(await call("GET", "/sandbox/%ff")).toEqual({
      status: 400,
      body: { path: "/sandbox/%ff", timestamp: expect.any(String), statusCode: 400, error: "Bad Request", message: 'malformed percent-encoding in path segment "%ff"' },
    });
  });

  it("answers a missing sandbox with a 404 error body", async () => {
    expect(await call("GET", "/sandbox/does-not-exist")).toEqual({
      status: 404,
      body: { path: "/sandbox/does-not-exist", timestamp: expect.any(String), statusCode: 404, error: "Not Found", message: "Sandbox with ID or name does-not-exist not found" },
    });
  });

  it("pages a label-filtered list with limit and cursor, and filters by state", async () => {
    const labels = { "runwarden.instance": "inst-api", "runwarden.company": "co-1" };
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(String((await call("POST", "/sandbox", { name: `api-${i}`, labels })).body.id));
    await call("POST", "/sandbox", { name: "api-other", labels: { "runwarden.instance": "inst-other" } });
    await waitState(String(ids[4]), "started");
    await call("POST", `/sandbox/${ids[4]}/stop`);
    await waitState(String(ids[4]), "stopped");

    // Creation order only when asked for: Daytona's default is last activity, newest first.
    const q = `labels=${encodeURIComponent(JSON.stringify({ "runwarden.instance": "inst-api" }))}&sort=createdAt&order=asc`;
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page = await call("GET", `/sandbox?${q}&limit=2${cursor ? `&cursor=${cursor}` : ""}`);
      expect(page.status).toBe(200);
      const items = page.body.items as { id: string }[];
      expect(items.length).toBeLessThanOrEqual(2);
      seen.push(...items.map((s) => s.id));
      cursor = page.body.nextCursor as string | null;
      pages++;
    } while (cursor);
    expect(seen).toEqual(ids);
    expect(pages).toBe(3);

    const stopped = await call("GET", `/sandbox?${q}&states=stopped`);
    expect((stopped.body.items as { id: string }[]).map((s) => s.id)).toEqual([ids[4]]);
    expect((await call("GET", "/sandbox?labels=not-json")).status).toBe(400);
    expect((await call("GET", "/sandbox?limit=0")).status).toBe(400);
  });

  it("gives the toolbox proxy URL, and 404 for an unknown sandbox", async () => {
    const created = await call("POST", "/sandbox", { name: "api-toolbox", labels: { "runwarden.instance": "inst-api" } });
    expect(created.body.toolboxProxyUrl).toBe(`${t.emulator.url}/toolbox`);
    expect(await call("GET", `/sandbox/${String(created.body.id)}/toolbox-proxy-url`)).toEqual({ status: 200, body: { url: `${t.emulator.url}/toolbox` } });
    expect((await call("GET", "/sandbox/nope/toolbox-proxy-url")).status).toBe(404);
  });

  it("allows duplicate names when configured, answering GET by name with the newest", async () => {
    const first = await call("POST", "/sandbox", { name: "api-dup", labels: {} });
    expect((await call("POST", "/sandbox", { name: "api-dup", labels: {} })).status).toBe(409);
    await t.admin.configure({ duplicateNames: "allow" });
    try {
      const second = await call("POST", "/sandbox", { name: "api-dup", labels: {} });
      expect(second.status).toBe(200);
      expect(second.body.id).not.toBe(first.body.id);
      expect((await call("GET", "/sandbox/api-dup")).body.id).toBe(second.body.id);
    } finally {
      await t.admin.configure({ duplicateNames: "conflict" });
    }
  });

  it("rejects a malformed create", async () => {
    const res = await call("POST", "/sandbox", { name: "x", labels: { a: 1 } });
    expect(res.status).toBe(400);
    expect(res.body.message).toMatch(/labels/);
  });

  it("plants and lists every sandbox through the admin API, and resets", async () => {
    await t.admin.plant({ name: "decoy-other-host", labels: { "runwarden.instance": "inst-x", "runwarden.host": "elsewhere" } });
    const all = await t.admin.sandboxes();
    expect(all.map((s) => s.name)).toContain("decoy-other-host");
    expect(all.find((s) => s.name === "decoy-other-host")).toMatchObject({ materialised: true, destroyedAt: null, runnerProcess: { state: "absent" } });
    await t.admin.reset();
    expect(await t.admin.sandboxes()).toEqual([]);
  });
});

describe("providerFromEnv", () => {
  it("uses the emulator unless DAYTONA_API_URL is set, and then requires the key", () => {
    const emu = providerFromEnv(readEnv({ EMULATOR_PORT: "3999" }));
    expect(emu).toMatchObject({ target: "emulator", apiUrl: "http://127.0.0.1:3999" });
    const daytona = providerFromEnv(readEnv({ DAYTONA_API_URL: "https://app.daytona.io/api", DAYTONA_API_KEY: "dtn_x" }));
    expect(daytona).toMatchObject({ target: "daytona", apiUrl: "https://app.daytona.io/api" });
    expect(() => providerFromEnv(readEnv({ DAYTONA_API_URL: "https://app.daytona.io/api" }))).toThrow(/DAYTONA_API_KEY/);
  });

  it("reaches the emulator through EMULATOR_URL with the first key", async () => {
    const { provider } = providerFromEnv(readEnv({ EMULATOR_URL: t.emulator.url, EMULATOR_API_KEY: "emulator-key,other" }), { instanceId: "inst-env" });
    const created = await provider.create({ name: "rw-create-op-env", labels: { "runwarden.instance": "inst-env" } });
    expect((await provider.getByName("rw-create-op-env"))?.id).toBe(created.id);
  });
});
