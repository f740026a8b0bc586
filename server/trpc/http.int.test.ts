import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ControllerContext } from "../controller/context";
import { startControllerHarness, type ControllerHarness } from "../test/controller";
import { deepJson } from "../test/fuzz";
import { testUser } from "../test/users";
import { API_LIMITS, trpcHttpHandler } from "./http";
import { servicesOf } from "../services";

/** The endpoint's own limits (docs/access.md, "What the API accepts"), through the handler the route serves, against PostgreSQL. */

let h: ControllerHarness;
let service: ControllerContext;
const operator = testUser("operator");
const URL_BASE = "http://localhost:3000/api/trpc";

beforeAll(async () => {
  h = await startControllerHarness();
  service = h.service();
});
afterAll(() => h.close());

const handle = (req: Request) => trpcHttpHandler(req, { db: h.db.db, services: servicesOf(service), user: operator });
const post = (path: string, body: BodyInit, headers: Record<string, string> = {}) =>
  handle(new Request(`${URL_BASE}/${path}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body, duplex: "half" } as RequestInit));

async function refusals(action: string): Promise<{ detail: unknown; actor: string }[]> {
  return h.db.db.auditEntry.findMany({ where: { action, outcome: "refused" }, orderBy: { id: "asc" }, select: { detail: true, actor: true } });
}

async function messageOf(res: Response): Promise<string> {
  const body = (await res.json()) as { error: { json: { message: string; data: { httpStatus: number } } } };
  expect(body.error.json.data.httpStatus).toBe(res.status);
  return body.error.json.message;
}

describe("a body over API_LIMITS.bodyBytes", () => {
  const big = `{"json":{"companyId":"co-a","taskId":"t","agent":"a","provider":"${"x".repeat(API_LIMITS.bodyBytes)}"}}`;

  it("is a 413 with a message, and audited for a mutation", async () => {
    const res = await post("runs.create", big);
    expect(res.status).toBe(413);
    expect(await messageOf(res)).toBe(`the request body is over the limit of ${API_LIMITS.bodyBytes} bytes`);
    const audited = await refusals("runs.create");
    expect(audited.at(-1)).toMatchObject({ actor: operator.email, detail: { limit: "bodyBytes" } });
  });

  it("is a 413 also when streamed without a length (the bytes are counted as they come)", async () => {
    const bytes = new TextEncoder().encode(big);
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < bytes.length; i += 64 * 1024) controller.enqueue(bytes.slice(i, i + 64 * 1024));
        controller.close();
      },
    });
    const before = (await refusals("orphans.reclaim")).length;
    const res = await post("orphans.reclaim", stream);
    expect(res.status).toBe(413);
    expect((await refusals("orphans.reclaim")).length).toBe(before + 1);
  });

  it("a body just under the limit reaches the procedure (which refuses it by its own rules)", async () => {
    const res = await post("runs.create", `{"json":{"companyId":"co-a","taskId":"t","agent":"a","provider":"${"x".repeat(API_LIMITS.bodyBytes - 200)}"}}`);
    expect(res.status).toBe(400);
    expect(await messageOf(res)).toMatch(/^provider: at most 40 characters/);
  });
});

describe("JSON nested deeper than API_LIMITS.jsonDepth", () => {
  it("is a 400 with a message, and audited for a mutation", async () => {
    const res = await post("waves.import", deepJson(API_LIMITS.jsonDepth, "object"));
    expect(res.status).toBe(400);
    expect(await messageOf(res)).toBe(`input: nested deeper than ${API_LIMITS.jsonDepth} levels`);
    expect((await refusals("waves.import")).at(-1)).toMatchObject({ detail: { limit: "jsonDepth" } });
  });

  it("is a 400 in a query's URL too, not audited (a query changes nothing)", async () => {
    const before = await h.db.db.auditEntry.count();
    const res = await handle(new Request(`${URL_BASE}/runs.list?input=${encodeURIComponent(deepJson(100_000, "array"))}`));
    expect(res.status).toBe(400);
    expect(await messageOf(res)).toMatch(/nested deeper/);
    expect(await h.db.db.auditEntry.count()).toBe(before);
  });

  it("nesting at the limit passes on to the procedure; brackets inside strings do not count", async () => {
    const atLimit = await post("waves.import", `{"json":{"report":${"[".repeat(API_LIMITS.jsonDepth - 2)}${"]".repeat(API_LIMITS.jsonDepth - 2)}}}`);
    expect(atLimit.status).toBe(400);
    expect(await messageOf(atLimit)).not.toMatch(/nested deeper/);
    const inString = await post("runs.create", JSON.stringify({ json: { companyId: "co-a", taskId: "t", agent: "a", provider: "[".repeat(1000) } }));
    expect(await messageOf(inString)).toMatch(/^provider: /);
  });

  it("a batch names each procedure in its answer and audits each mutation", async () => {
    const res = await post("runs.create,sweeps.run?batch=1", `{"0":${deepJson(600, "array")}}`);
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { json: { data: { path: string } } } }[];
    expect(body.map((b) => b.error.json.data.path)).toEqual(["runs.create", "sweeps.run"]);
    expect((await refusals("sweeps.run")).at(-1)).toMatchObject({ detail: { limit: "jsonDepth" } });
  });
});

describe("the same-origin check moved with the handler", () => {
  it("refuses a cross-site POST with 403 and audits it", async () => {
    const res = await post("runs.create", "{}", { origin: "http://evil.example" });
    expect(res.status).toBe(403);
    expect((await refusals("csrf.refused")).at(-1)).toMatchObject({ detail: { origin: "http://evil.example" } });
  });
});
