import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DaytonaProvider } from "./daytona";
import { createRunnerClient } from "./runner";
import { instanceScope, ProviderError } from "./types";

/**
 * A provider that answers garbage: each path of this tiny server misbehaves in one way,
 * and the provider must say clearly what was wrong.
 */

type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;
const routes = new Map<string, Handler>();
let server: http.Server;
let base = "";

const sandbox = (over: Record<string, unknown> = {}) => ({
  id: "sbx-1",
  name: "rw-create-op-1",
  labels: { "runwarden.instance": "inst-a" },
  state: "started",
  cpu: 1,
  memory: 1,
  disk: 3,
  createdAt: "2026-11-12T00:00:00.000Z",
  toolboxProxyUrl: `${base}/toolbox`,
  ...over,
});

function send(res: http.ServerResponse, status: number, type: string, body: string) {
  res.writeHead(status, { "content-type": type });
  res.end(body);
}

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const path = (req.url ?? "").split("?")[0] ?? "";
    const handler = routes.get(`${req.method} ${path}`);
    if (handler) return handler(req, res);
    send(res, 404, "application/json", JSON.stringify({ message: "not found", code: "not_found", statusCode: 404 }));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  routes.set("GET /sandbox/html", (_q, res) => send(res, 200, "text/html", "<!doctype html><html><body>Welcome to nginx!</body></html>"));
  routes.set("GET /sandbox/broken-json", (_q, res) => send(res, 200, "application/json", '{"id": "sbx-1", "name": '));
  routes.set("GET /sandbox/wrong-shape", (_q, res) => send(res, 200, "application/json", JSON.stringify({ foo: 1 })));
  routes.set("GET /sandbox/other-name", (_q, res) => send(res, 200, "application/json", JSON.stringify(sandbox({ name: "someone-else" }))));
  routes.set("GET /sandbox/bad-gateway", (_q, res) => send(res, 502, "text/html", "<html><h1>502 Bad Gateway</h1></html>"));
  routes.set("GET /sandbox/forbidden", (_q, res) =>
    send(res, 403, "application/json", JSON.stringify({ message: "API key lacks permission", code: "forbidden", statusCode: 403 })),
  );
  routes.set("GET /sandbox/slow", () => {
    // never answers
  });
  routes.set("GET /sandbox/sbx-1", (_q, res) => send(res, 200, "application/json", JSON.stringify(sandbox())));
  routes.set("GET /toolbox/sbx-1/files/download", (_q, res) => send(res, 500, "text/plain", "toolbox exploded"));
  routes.set("GET /toolbox/sbx-1/user-home-dir", (_q, res) => send(res, 200, "application/json", JSON.stringify({ dir: "/home/daytona" })));
  routes.set("POST /toolbox/sbx-1/files/bulk-upload", (_q, res) => send(res, 200, "application/json", "{}"));
  routes.set("POST /toolbox/sbx-1/process/execute", (_q, res) => send(res, 200, "text/html", "<html>login</html>"));
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

const provider = (timeoutMs = 2000) => new DaytonaProvider({ apiUrl: base, apiKey: "k", timeoutMs });

async function failure(p: Promise<unknown>): Promise<ProviderError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ProviderError);
  return err as ProviderError;
}

describe("a provider that answers garbage", () => {
  it("names HTML where a sandbox was expected", async () => {
    const err = await failure(provider().getByName("html"));
    expect(err.kind).toBe("garbage");
    expect(err.message).toMatch(/GET \/sandbox\/html/);
    expect(err.message).toMatch(/does not fit the API/);
    expect(err.message).toMatch(/Welcome to nginx/);
  });

  it("names invalid JSON", async () => {
    const err = await failure(provider().getByName("broken-json"));
    expect(err.kind).toBe("garbage");
    expect(err.message).toMatch(/"\{\\"id\\": \\"sbx-1\\", \\"name\\":"/);
  });

  it("names the missing field of a wrong-shaped answer", async () => {
    const err = await failure(provider().getByName("wrong-shape"));
    expect(err.kind).toBe("garbage");
    expect(err.message).toMatch(/\bid\b/);
    expect(err.message).toMatch(/\{"foo":1\}/);
  });

  it("refuses a sandbox whose name is not the exact name asked for", async () => {
    const err = await failure(provider().getByName("other-name"));
    expect(err.kind).toBe("garbage");
    expect(err.message).toMatch(/someone-else/);
  });

  it("reports an error status with an HTML body as http, with the status and an excerpt", async () => {
    const err = await failure(provider().getByName("bad-gateway"));
    expect(err).toMatchObject({ kind: "http", status: 502 });
    expect(err.message).toMatch(/HTTP 502 with text\/html: .*502 Bad Gateway/);
  });

  it("keeps the provider's own message and code", async () => {
    const err = await failure(provider().getByName("forbidden"));
    expect(err).toMatchObject({ kind: "http", status: 403, code: "forbidden" });
    expect(err.message).toMatch(/API key lacks permission/);
  });

  it("times out a provider that never answers", async () => {
    const started = Date.now();
    const err = await failure(provider(300).getByName("slow"));
    expect(err.kind).toBe("timeout");
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it("reports a provider that is not there as unreachable", async () => {
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, "127.0.0.1", r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const err = await failure(new DaytonaProvider({ apiUrl: `http://127.0.0.1:${port}`, apiKey: "k", timeoutMs: 2000 }).getByName("x"));
    expect(err.kind).toBe("unreachable");
    expect(err.message).toMatch(/ECONNREFUSED/);
  });

  it("rejects a list in the old plain-array shape, a repeated cursor, and drops foreign items a provider failed to filter", async () => {
    routes.set("GET /sandbox", (_q, res) => send(res, 200, "application/json", JSON.stringify([sandbox()])));
    expect((await failure(provider().listByLabels(instanceScope("inst-a")))).message).toMatch(/plain array/);

    routes.set("GET /sandbox", (_q, res) => send(res, 200, "application/json", JSON.stringify({ items: [sandbox()], nextCursor: "same" })));
    expect((await failure(provider().listByLabels(instanceScope("inst-a")))).message).toMatch(/repeated the cursor/);

    const foreign = sandbox({ id: "sbx-2", name: "theirs", labels: { "runwarden.instance": "inst-b" } });
    routes.set("GET /sandbox", (_q, res) => send(res, 200, "application/json", JSON.stringify({ items: [sandbox(), foreign], nextCursor: null })));
    const listed = await provider().listByLabels(instanceScope("inst-a"));
    expect(listed.map((s) => s.id)).toEqual(["sbx-1"]);
  });

  it("hands the list out page by page, fetching a page only when asked, and fails on garbage after the pages before it", async () => {
    const requests: string[] = [];
    /** Page `cursor` of a list: its items and the cursor it answers with, or a raw body. */
    const pages = (answers: Record<string, unknown>) =>
      routes.set("GET /sandbox", (q, res) => {
        const cursor = new URL(q.url ?? "", base).searchParams.get("cursor") ?? "first";
        requests.push(cursor);
        send(res, 200, "application/json", JSON.stringify(answers[cursor]));
      });
    const foreign = sandbox({ id: "sbx-f", name: "theirs", labels: { "runwarden.instance": "inst-b" } });
    pages({ first: { items: [sandbox(), foreign], nextCursor: "c2" }, c2: { items: [sandbox({ id: "sbx-2", name: "two" })], nextCursor: null } });
    const gen = provider().listPagesByLabels(instanceScope("inst-a"));
    const first = await gen.next();
    // One page fetched for one page asked: the second is not read ahead.
    expect(requests).toEqual(["first"]);
    expect(first.value?.map((s) => s.id)).toEqual(["sbx-1"]);
    expect((await gen.next()).value?.map((s) => s.id)).toEqual(["sbx-2"]);
    expect((await gen.next()).done).toBe(true);
    expect(requests).toEqual(["first", "c2"]);

    const collect = async (gen: AsyncGenerator<Array<{ id: string }>>) => {
      const seen: string[][] = [];
      const err = await (async () => {
        for await (const page of gen) seen.push(page.map((s) => s.id));
      })().then(
        () => null,
        (e: unknown) => e,
      );
      return { seen, err: err as ProviderError | null };
    };
    pages({ first: { items: [sandbox()], nextCursor: "c2" }, c2: { items: [sandbox({ id: "sbx-2", name: "two" })], nextCursor: "c2" } });
    const repeated = await collect(provider().listPagesByLabels(instanceScope("inst-a")));
    expect(repeated.seen).toEqual([["sbx-1"]]);
    expect(repeated.err).toMatchObject({ kind: "garbage", message: expect.stringMatching(/repeated the cursor/) });

    pages({ first: { items: [sandbox()], nextCursor: "c2" }, c2: [sandbox({ id: "sbx-2", name: "two" })] });
    const array = await collect(provider().listPagesByLabels(instanceScope("inst-a")));
    expect(array.seen).toEqual([["sbx-1"]]);
    expect(array.err).toMatchObject({ kind: "garbage", message: expect.stringMatching(/plain array/) });

    pages({ first: { items: [sandbox()], nextCursor: "c2" }, c2: { items: [{ id: "sbx-2" }], nextCursor: null } });
    const shape = await collect(provider().listPagesByLabels(instanceScope("inst-a")));
    expect(shape.seen).toEqual([["sbx-1"]]);
    expect(shape.err).toMatchObject({ kind: "garbage", message: expect.stringMatching(/name/) });
  });

  it("reports a toolbox failure on a file read as http with the body", async () => {
    const err = await failure(provider().readFile("sbx-1", "/etc/hostname"));
    expect(err).toMatchObject({ kind: "http", status: 500 });
    expect(err.message).toMatch(/toolbox exploded/);
  });

  it("names garbage from the runner", async () => {
    const p = provider();
    const runner = createRunnerClient({ apiKey: "k", toolboxUrl: (id) => p.toolboxUrl(id) });
    const err = await failure(runner.sessionOpen("sbx-1", { timeoutMs: 2000 }));
    expect(err.kind).toBe("garbage");
    expect(err.message).toMatch(/session-open.*expected JSON, got text\/html.*login/);
  });
});
