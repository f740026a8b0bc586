import { Validator } from "@seriousme/openapi-schema-validator";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ControllerContext } from "../controller/context";
import { servicesOf } from "../services";
import { addUser } from "../auth/users";
import { handleAuthRequest } from "../auth/handler";
import { startControllerHarness, type ControllerHarness } from "../test/controller";
import { createApiToken } from "../tokens/create";
import { revokeApiToken } from "../tokens/revoke";
import { trpcHttpHandler } from "../trpc/http";
import { handleApiRequest, type ApiOptions } from "./handle";
import { openApiDocument } from "./openapi";

/**
 * The HTTP API (docs/api.md) through its real handler, PostgreSQL and the emulator: tokens and
 * what they may do, the one error shape, idempotent submits, and the OpenAPI document against
 * the routes it describes.
 */

let h: ControllerHarness;
let service: ControllerContext;
let options: ApiOptions;
const ADMIN = { id: "admin@test.local", role: "admin" };
const ORIGIN = "http://localhost:3000";

beforeAll(async () => {
  h = await startControllerHarness();
  service = h.service();
  options = { db: h.db.db, services: servicesOf(service) };
});
afterAll(() => h.close());

async function token(name: string, role: "viewer" | "board" | "operator", companies: string[] = ["co-1"], expiresIn = "30d") {
  const made = await createApiToken(h.db.db, servicesOf(service).instanceId, ADMIN, { all: true }, { name, role, companies, expiresIn });
  return made.token;
}

function call(method: string, path: string, auth: string | null, body?: unknown, headers: Record<string, string> = {}, extra: Partial<ApiOptions> = {}) {
  return handleApiRequest(
    new Request(`${ORIGIN}/api/v1${path}`, {
      method,
      headers: { ...(auth ? { authorization: `Bearer ${auth}` } : {}), ...(body !== undefined ? { "content-type": "application/json" } : {}), ...headers },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    }),
    { ...options, ...extra },
  );
}

const submit = (taskId: string, over: Record<string, unknown> = {}) => ({ companyId: "co-1", taskId, agent: "a", provider: "codex", turns: 1, ...over });

describe("tokens: who may call, and what the API answers them", () => {
  it("no token, a malformed one, an unknown one: 401 in the one error shape", async () => {
    for (const [auth, message] of [
      [null, /no API token/],
      ["not-a-token", /not Bearer and an API token/],
      [`rw_${"x".repeat(43)}`, /unknown API token/],
    ] as const) {
      const res = await call("GET", "/runs", auth);
      expect(res.status).toBe(401);
      expect(await res.json()).toEqual({ error: { code: "UNAUTHORIZED", message: expect.stringMatching(message), field: null } });
    }
  });

  it("a session cookie does not open the API, and a token does not open the dashboard's routes", async () => {
    await addUser(h.db.db, { email: "op@example.com", role: "operator", companies: ["*"], password: "correct horse battery" }, ADMIN, { all: true });
    const signed = await handleAuthRequest(
      h.db.db,
      new Request(`${ORIGIN}/api/auth/sign-in/email`, { method: "POST", headers: { "content-type": "application/json", origin: ORIGIN }, body: JSON.stringify({ email: "op@example.com", password: "correct horse battery" }) }),
    );
    const cookie = signed.headers.getSetCookie().map((c) => c.split(";")[0]).join("; ");
    expect(cookie).toMatch(/session_token=/);
    const byCookie = await call("POST", "/runs", null, submit("cookie-task"), { cookie, origin: ORIGIN });
    expect(byCookie.status).toBe(401);
    expect(await h.db.db.run.count({ where: { taskId: "cookie-task" } })).toBe(0);
    const t = await token("not-for-trpc", "operator");
    const trpc = await trpcHttpHandler(new Request(`${ORIGIN}/api/trpc/runs.list?input=${encodeURIComponent(JSON.stringify({ json: {} }))}`, { headers: { authorization: `Bearer ${t}` } }), { db: h.db.db, services: servicesOf(service) });
    expect(trpc.status).toBe(401);
  });

  it("an expired token and a revoked one are refused on their next request, saying which", async () => {
    const expired = await token("expired", "viewer");
    await h.db.db.apiToken.update({ where: { instanceId_name: { instanceId: servicesOf(service).instanceId, name: "expired" } }, data: { expiresAt: new Date(Date.now() - 1000) } });
    const e = await call("GET", "/runs", expired);
    expect(e.status).toBe(401);
    expect((await e.json()).error.message).toMatch(/^token rw_.{8}… expired at /);
    const revoked = await token("revoked", "viewer");
    expect((await call("GET", "/runs", revoked)).status).toBe(200);
    const row = await h.db.db.apiToken.findFirstOrThrow({ where: { name: "revoked" } });
    await revokeApiToken(h.db.db, servicesOf(service).instanceId, ADMIN, { all: true }, { id: row.id });
    const r = await call("GET", "/runs", revoked);
    expect(r.status).toBe(401);
    expect((await r.json()).error.message).toMatch(/was revoked/);
    // Its last use is recorded, with the address the proxy gave.
    await call("GET", "/runs", await token("used", "viewer"), undefined, { "x-forwarded-for": "198.51.100.4" });
    expect(await h.db.db.apiToken.findFirstOrThrow({ where: { name: "used" } })).toMatchObject({ lastUsedAt: expect.any(Date), lastUsedIp: "198.51.100.4" });
  });

  it("a board token cannot submit (403, audited under the token's name); another company's run is a 404 like a missing one", async () => {
    const board = await token("board-bot", "board");
    const res = await call("POST", "/runs", board, submit("board-task"));
    expect(res.status).toBe(403);
    expect(await res.json()).toEqual({ error: { code: "FORBIDDEN", message: "runs.create needs the operator role; you are signed in as board", field: null } });
    expect(await h.db.db.auditEntry.findFirst({ where: { actor: "token:board-bot", action: "runs.create" } })).toMatchObject({ outcome: "refused" });
    const op = await token("op-bot", "operator", ["co-2"]);
    const made = await call("POST", "/runs", op, submit("co2-task", { companyId: "co-2" }));
    expect(made.status).toBe(201);
    const { id } = (await made.json()) as { id: string };
    const other = await call("GET", `/runs/${id}`, board);
    const missing = await call("GET", `/runs/${crypto.randomUUID()}`, board);
    expect(other.status).toBe(404);
    expect(missing.status).toBe(404);
    expect((await other.json()).error.code).toBe("NOT_FOUND");
    // The submit is audited under the token's name.
    expect(await h.db.db.auditEntry.findFirst({ where: { actor: "token:op-bot", action: "run.submit", targetId: id } })).toMatchObject({ outcome: "ok", role: "operator" });
  });

  it("a token's requests count against its own rate limit: 429 with Retry-After past it, other tokens unaffected", async () => {
    const a = await token("limited-a", "viewer");
    const b = await token("limited-b", "viewer");
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await call("GET", "/runs", a, undefined, {}, { ratePerMinute: 3 })).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
    const over = await call("GET", "/runs", a, undefined, {}, { ratePerMinute: 3 });
    expect(Number(over.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect((await over.json()).error.code).toBe("RATE_LIMITED");
    expect((await call("GET", "/runs", b, undefined, {}, { ratePerMinute: 3 })).status).toBe(200);
  });

  it("a wrong input names its field", async () => {
    const op = await token("typo-bot", "operator");
    const res = await call("POST", "/runs", op, submit("typo", { turns: 0 }));
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: { code: "INVALID_INPUT", message: expect.stringContaining("turns"), field: "body.turns" } });
    const q = await call("GET", "/runs?pageSize=1000", op);
    expect(q.status).toBe(400);
    expect((await q.json()).error.field).toBe("query.pageSize");
  });
});

describe("idempotent submits", () => {
  it("20 concurrent submits with one key make one run; a replay says so; the same key with another body is a 409", async () => {
    const op = await token("idem-bot", "operator");
    const answers = await Promise.all(Array.from({ length: 20 }, () => call("POST", "/runs", op, submit("idem-task"), { "idempotency-key": "k-1" })));
    const bodies = (await Promise.all(answers.map((r) => r.json()))) as { id: string; replayed: boolean }[];
    expect(new Set(bodies.map((b) => b.id)).size).toBe(1);
    expect(answers.map((r) => r.status).sort()).toEqual([...Array.from({ length: 19 }, () => 200), 201]);
    expect(answers.filter((r) => r.headers.get("idempotent-replayed") === "true")).toHaveLength(19);
    expect(await h.db.db.run.count({ where: { taskId: "idem-task" } })).toBe(1);
    const other = await call("POST", "/runs", op, submit("idem-task", { turns: 2 }), { "idempotency-key": "k-1" });
    expect(other.status).toBe(409);
    expect((await other.json()).error.message).toMatch(/Idempotency-Key k-1 was used with a different request body/);
  });

  it("the body's externalId is the key when no header is sent, and is kept on the run", async () => {
    const op = await token("ext-bot", "operator");
    const first = await call("POST", "/runs", op, submit("ext-task", { externalId: "board-run-77" }));
    const again = await call("POST", "/runs", op, submit("ext-task", { externalId: "board-run-77" }));
    expect([first.status, again.status]).toEqual([201, 200]);
    const { id } = (await first.json()) as { id: string };
    expect(((await again.json()) as { id: string }).id).toBe(id);
    expect(((await (await call("GET", `/runs/${id}`, op)).json()) as { externalId: string }).externalId).toBe("board-run-77");
    // Failed with Retry offered, it is retried through the API: the successor keeps the platform's id.
    await h.db.db.run.update({ where: { id }, data: { status: "failed", outcome: "terminal_failure", failureCode: "native_provider_startup_rejected", owner: "board", canRetry: true, finishedAt: new Date() } });
    const before = (await (await call("GET", `/runs/${id}`, op)).json()) as { retryOffered: boolean; reason: string };
    expect(before).toMatchObject({ retryOffered: true, reason: expect.stringMatching(/./) });
    const retried = await call("POST", `/runs/${id}/retry`, op);
    expect(retried.status).toBe(200);
    const successor = ((await retried.json()) as { run: { id: string }; created: boolean }).run.id;
    expect(await (await call("GET", `/runs/${successor}`, op)).json()).toMatchObject({ externalId: "board-run-77", previousRunId: id, status: "queued" });
    expect(await (await call("GET", `/runs/${id}`, op)).json()).toMatchObject({ successorId: successor, currentRunId: successor, retryOffered: false });
  });
});

describe("the OpenAPI document", () => {
  it("is served without a token and is a valid OpenAPI 3.1 document", async () => {
    const res = await call("GET", "/openapi.json", null);
    expect(res.status).toBe(200);
    const doc = await res.json();
    const validator = new Validator();
    const result = await validator.validate(doc);
    expect(result.errors ?? [], JSON.stringify(result.errors)).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe("3.1");
  });

  it("every documented operation answers at its path and method, as its role allows", async () => {
    const op = await token("tour-bot", "operator", ["*"]);
    const made = (await (await call("POST", "/runs", op, submit("tour-task"), { "idempotency-key": "tour" })).json()) as { id: string };
    const planRes = await call("POST", "/bulk", op, { kind: "cancel", filter: { companyId: "co-1", status: "queued" } });
    const plan = (await planRes.json()) as { id: string; confirmWord: string };
    expect(planRes.status, JSON.stringify(plan)).toBe(200);
    const forecast = (await (await call("POST", "/forecasts", op)).json()) as { id: string };
    const ids: Record<string, string> = { id: made.id, planId: plan.id };
    const doc = openApiDocument() as { paths: Record<string, Record<string, { operationId: string; requestBody?: unknown }>> };
    const bodies: Record<string, unknown> = {
      submitRun: submit("tour-task-2"),
      cancelRun: { reason: "tour" },
      previewBulkPlan: { kind: "retry", filter: { failureCode: "none-such" } },
      confirmBulkPlan: { confirm: plan.confirmWord },
    };
    const seen: string[] = [];
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(ops)) {
        const url = path.replace("{id}", path.startsWith("/forecasts") ? forecast.id : ids.id!).replace("{planId}", ids.planId!);
        const res = await call(method.toUpperCase(), url, op, operation.requestBody ? bodies[operation.operationId] : undefined);
        const body = await res.json();
        // Answered by the route itself: a success, or a refusal of the rule (never a missing route, never a 500).
        expect({ op: operation.operationId, status: res.status }, JSON.stringify(body)).toEqual({ op: operation.operationId, status: expect.toBeOneOf([200, 201, 409, 412]) });
        seen.push(operation.operationId);
      }
    }
    expect(seen.sort()).toEqual(["cancelRun", "confirmBulkPlan", "getBulkPlan", "getForecast", "getRun", "getRunEvidence", "listRunProofs", "listRuns", "previewBulkPlan", "retryRun", "submitRun", "takeForecast"]);
  });
});
