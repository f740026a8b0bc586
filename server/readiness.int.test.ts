import crypto from "node:crypto";
import http from "node:http";
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDb } from "./db/client";
import { LIVE_CONTROLLER_WINDOW_SECONDS } from "./health";
import { healthResponse, READINESS_TIMEOUT_MS, readinessSources, readReadiness, type ReadinessSources } from "./readiness";
import { withTestDatabase } from "./test/context";
import { freePort } from "./test/product";

/**
 * GET /api/health's judgement (server/readiness.ts) against a real PostgreSQL: each part up or
 * down as a process manager needs to know it, each answer within its bound even when a part
 * hangs, and nothing in the answer but the parts' names and states.
 */

const t = withTestDatabase();
const INSTANCE = "inst-ready";
const closers: Array<() => Promise<void>> = [];

/** An HTTP server on loopback; `answer: false` accepts and never replies (a hung process). */
async function server(answer: boolean): Promise<string> {
  const srv = http.createServer((req, res) => {
    if (!answer) return;
    res.writeHead(req.url === "/health" ? 200 : 404, { "content-type": "application/json" }).end('{"ok":true}');
  });
  await new Promise<void>((resolve) => srv.listen(0, "127.0.0.1", resolve));
  closers.push(() => new Promise((resolve) => srv.close(() => resolve())));
  // A hung client keeps its socket open; close() would wait for it for ever.
  closers.push(async () => srv.closeAllConnections());
  return `http://127.0.0.1:${(srv.address() as net.AddressInfo).port}`;
}

/** A TCP port that accepts connections and never says a word (PostgreSQL stopped with SIGSTOP). */
async function silentPort(): Promise<number> {
  const sockets = new Set<net.Socket>();
  const srv = net.createServer((s) => sockets.add(s));
  await new Promise<void>((resolve) => srv.listen(0, "127.0.0.1", resolve));
  closers.push(async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((resolve) => srv.close(() => resolve()));
  });
  return (srv.address() as net.AddressInfo).port;
}

let emulator: string;
beforeAll(async () => {
  emulator = await server(true);
  await t.current.db.$executeRaw`INSERT INTO instances (id, name) VALUES (${INSTANCE}, ${INSTANCE}), ('inst-other', 'inst-other')`;
});
afterAll(async () => {
  while (closers.length) await closers.pop()!();
});

/** A controller row of `instance` last heard from `agoSeconds` ago. */
async function controller(instance: string, agoSeconds: number, stopped = false): Promise<string> {
  const bootId = crypto.randomUUID();
  await t.current.db.$executeRaw`
    INSERT INTO controller_processes (boot_id, instance_id, pid, started_at, hostname, pid_space, last_seen_at, stopped_at)
    VALUES (${bootId}, ${instance}, 4242, now(), 'host-a', 'pidns', now() - make_interval(secs => ${agoSeconds}), ${stopped ? new Date() : null})`;
  return bootId;
}

const sources = (over: Partial<ReadinessSources> = {}): ReadinessSources => ({
  db: t.current.db,
  instanceId: async () => INSTANCE,
  emulatorUrl: emulator,
  ...over,
});

describe("readiness (GET /api/health)", () => {
  it("a controller live for another instance, one stopped and one silent past the window: controller down, 503 naming only it", async () => {
    await controller("inst-other", 0);
    await controller(INSTANCE, 0, true);
    await controller(INSTANCE, LIVE_CONTROLLER_WINDOW_SECONDS + 5);
    const res = await healthResponse(sources());
    expect(res.status).toBe(503);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(await res.json()).toEqual({ status: "down", down: ["controller"], parts: { database: "up", controller: "down", emulator: "up" } });
  });

  it("with a live controller and the emulator answering: 200, every part up", async () => {
    const live = await controller(INSTANCE, 1);
    const res = await healthResponse(sources());
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(await res.json()).toEqual({ status: "ok", down: [], parts: { database: "up", controller: "up", emulator: "up" } });
    // The same with Daytona: the emulator is not asked.
    expect(await readReadiness(sources({ emulatorUrl: null }))).toEqual({ status: "ok", down: [], parts: { database: "up", controller: "up", emulator: "not_used" } });
    await t.current.db.controllerProcess.update({ where: { bootId: live }, data: { stoppedAt: new Date() } });
  });

  it("the emulator refusing, or accepting and never answering: emulator down, within the bound, its address never said", async () => {
    await controller(INSTANCE, 0);
    const refused = `http://127.0.0.1:${await freePort()}`;
    const refusedRes = await healthResponse(sources({ emulatorUrl: refused }));
    expect(refusedRes.status).toBe(503);
    const body = await refusedRes.text();
    expect(JSON.parse(body)).toEqual({ status: "down", down: ["emulator"], parts: { database: "up", controller: "up", emulator: "down" } });
    expect(body).not.toMatch(/127\.0\.0\.1|http|refused|ECONN/i);

    const hung = await server(false);
    const t0 = Date.now();
    expect(await readReadiness(sources({ emulatorUrl: hung, timeoutMs: 500 }))).toMatchObject({ down: ["emulator"] });
    expect(Date.now() - t0).toBeLessThan(1_500);
  });

  it("the database refusing, or accepting and never answering: database down (and no controller can be shown live), within the bound", async () => {
    const refusedDb = createDb(`postgresql://postgres:secret@127.0.0.1:${await freePort()}/runwarden`, { max: 1 });
    closers.push(() => refusedDb.$disconnect());
    const res = await healthResponse(sources({ db: refusedDb }));
    expect(res.status).toBe(503);
    const body = await res.text();
    expect(JSON.parse(body)).toEqual({ status: "down", down: ["database", "controller"], parts: { database: "down", controller: "down", emulator: "up" } });
    expect(body).not.toMatch(/127\.0\.0\.1|postgres|secret|ECONN/i);

    const hungDb = createDb(`postgresql://postgres:secret@127.0.0.1:${await silentPort()}/runwarden`, { max: 1 });
    const t0 = Date.now();
    expect(await readReadiness(sources({ db: hungDb, timeoutMs: 500 }))).toMatchObject({ down: ["database", "controller"] });
    expect(Date.now() - t0).toBeLessThan(1_500);
    expect(READINESS_TIMEOUT_MS).toBeLessThanOrEqual(5_000); // the docs' HEALTHCHECK --timeout
  });

  it("the dashboard's sources: its instance id, the emulator only without DAYTONA_API_URL", async () => {
    // instanceIdOf keeps one id per client: a client each.
    const [a, b] = [createDb(t.current.url, { max: 1 }), createDb(t.current.url, { max: 1 })];
    closers.push(() => a.$disconnect(), () => b.$disconnect());
    const explicit = readinessSources(a, { RUNWARDEN_INSTANCE_ID: INSTANCE, DAYTONA_API_URL: undefined, EMULATOR_URL: undefined, EMULATOR_PORT: 3901 });
    expect(await explicit.instanceId()).toBe(INSTANCE);
    expect(explicit.emulatorUrl).toBe("http://127.0.0.1:3901");
    const daytona = readinessSources(b, { RUNWARDEN_INSTANCE_ID: undefined, DAYTONA_API_URL: "https://app.daytona.io/api", EMULATOR_URL: undefined, EMULATOR_PORT: 3901 });
    expect(daytona.emulatorUrl).toBeNull();
    // The installation's own id, kept in the database (server/db/installation.ts).
    expect(await daytona.instanceId()).toBe((await t.current.db.installation.findUniqueOrThrow({ where: { id: 1 } })).instanceId);
  });
});
