import { TRPCError } from "@trpc/server";
import crypto from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ControllerContext } from "../controller/context";
import { startControllerHarness, type ControllerHarness } from "../test/controller";
import { encodeCursor, sealCursor } from "../runs/cursor";
import { sampleWaveReport } from "../test/fuzz";
import { testUser } from "../test/users";
import { createCaller } from "./root";
import { trpcHttpHandler } from "./http";
import { createTRPCContext } from "./trpc";
import { servicesOf } from "../services";

/** What the API accepts (docs/access.md): control characters, forged cursors and refusals at validation, through the real router and PostgreSQL. */

let h: ControllerHarness;
let service: ControllerContext;
const admin = testUser("admin");
beforeAll(async () => {
  h = await startControllerHarness();
  service = h.service();
});
afterAll(() => h.close());

const caller = (user = admin) => createCaller(() => createTRPCContext({ user, headers: new Headers(), db: h.db.db, services: servicesOf(service) }));

async function failure(p: Promise<unknown>): Promise<{ code: string; message: string }> {
  const err = await p.then(() => null, (e: unknown) => e);
  if (err instanceof TRPCError) return { code: err.code, message: err.message };
  return { code: err === null ? "OK" : `THREW ${String(err)}`, message: "" };
}

const NUL = "a\u0000b";

describe("16.3: control characters", () => {
  it.each([
    ["runs.create", () => caller().runs.create({ companyId: "co-a", taskId: "t", agent: "a", provider: NUL }), "provider"],
    ["users.add (name)", () => caller().users.add({ email: "n@example.com", name: NUL, role: "viewer", companies: ["co-a"] }), "name"],
    ["users.add (companies)", () => caller().users.add({ email: "n@example.com", role: "viewer", companies: [NUL] }), "companies.0"],
    ["orphans.reclaim", () => caller().orphans.reclaim({ dryRun: true, sandboxIds: [NUL] }), "sandboxIds.0"],
    ["runs.list", () => caller().runs.list({ search: NUL }), "search"],
    ["runs.failureGroups", () => caller().runs.failureGroups({ companyId: NUL }), "companyId"],
    ["waves.get", () => caller().waves.get({ id: NUL }), "id"],
    ["waves.compare", () => caller().waves.compare({ a: NUL, b: "w" }), "a"],
    ["intents.list", () => caller().intents.list({ search: NUL }), "search"],
    ["audit.list", () => caller().audit.list({ actor: NUL }), "actor"],
    ["runs.list (escape)", () => caller().runs.list({ search: "\u001b[31mred" }), "search"],
  ])("%s refuses it with a 400 naming the field", async (_name, call, field) => {
    const f = await failure(call());
    expect(f.code).toBe("BAD_REQUEST");
    expect(f.message).toBe(`${field}: must not contain control characters`);
  });

  it("a refused mutation holding NUL is audited, the NUL kept visibly escaped", async () => {
    await failure(caller().users.add({ email: "nul@example.com", role: "viewer", companies: ["co-a"], name: NUL }));
    const entry = await h.db.db.auditEntry.findFirstOrThrow({ where: { action: "users.add", outcome: "refused" }, orderBy: { id: "desc" } });
    expect(entry.input).toMatchObject({ email: "nul@example.com", name: "a\\u0000b" });
  });

  it("NUL inside a wave report (free-form JSON) is a 400, and audited", async () => {
    const f = await failure(caller().waves.import({ report: { id: NUL, tasks: [] } }));
    expect(f.code).toBe("BAD_REQUEST");
    expect(f.message).not.toMatch(/prisma|postgres|invocation|22P05|SQL/i);
    expect(await h.db.db.auditEntry.count({ where: { action: "wave.import", outcome: "refused" } })).toBeGreaterThan(0);
  });
});

describe("16.4: cursors", () => {
  it("a runs.list cursor whose id is not a UUID (forged) is a 400, never database text", async () => {
    const forged = Buffer.from(JSON.stringify({ t: new Date().toISOString(), id: "not-a-uuid" })).toString("base64url");
    const f = await failure(caller().runs.list({ cursor: forged }));
    expect(f).toEqual({ code: "BAD_REQUEST", message: "cursor: not a cursor of this list (open the first page again)" });
  });

  it("a cursor of this server with an edited payload is refused", async () => {
    const real = encodeCursor({ createdAt: new Date(), id: "00000000-0000-4000-8000-000000000000" });
    const edited = `${Buffer.from(JSON.stringify({ t: new Date().toISOString(), id: "x" })).toString("base64url")}.${real.split(".")[1]}`;
    expect((await failure(caller().runs.list({ cursor: edited }))).code).toBe("BAD_REQUEST");
    expect((await failure(caller().runs.list({ cursor: real }))).code).toBe("OK");
  });

  it("an audit.list cursor past bigint is a 400", async () => {
    const f = await failure(caller().audit.list({ cursor: "99999999999999999999999" }));
    expect(f.code).toBe("BAD_REQUEST");
    expect(f.message).toMatch(/^cursor: /);
  });

  it("audit pages follow each other with the cursor handed out", async () => {
    for (let i = 0; i < 3; i++) await failure(caller().runs.retry({ runId: `bad-${i}` }));
    const first = await caller().audit.list({ pageSize: 1 });
    expect(first.nextCursor).toBeTruthy();
    const second = await caller().audit.list({ pageSize: 1, cursor: first.nextCursor! });
    expect(Number(second.items[0]!.id)).toBeLessThan(Number(first.items[0]!.id));
  });
});

describe("16.5: mutations refused at input validation are audited", () => {
  it.each([
    ["runs.retry", () => caller().runs.retry({ runId: "not-a-uuid" })],
    ["orphans.reclaim", () => caller().orphans.reclaim({ dryRun: false, sandboxIds: ["sb-1"], confirm: "destroy 1" })],
    ["users.add", () => caller().users.add({ email: "not an email", role: "viewer", companies: ["co-a"] })],
  ])("%s", async (path, call) => {
    const before = await h.db.db.auditEntry.count({ where: { action: path, outcome: "refused" } });
    expect((await failure(call())).code).toBe("BAD_REQUEST");
    const entries = await h.db.db.auditEntry.findMany({ where: { action: path, outcome: "refused" }, orderBy: { id: "desc" } });
    expect(entries.length).toBe(before + 1);
    expect(entries[0]!.actor).toBe(admin.email);
    expect(JSON.stringify(entries[0]!.detail)).toMatch(/reason/);
  });
});

describe("what the fuzz test found (server/trpc/fuzz.int.test.ts)", () => {
  const now = () => new Date().toISOString();
  const uuid = () => crypto.randomUUID();

  it("a runs.list cursor signed by this server around a non-UUID id is a 400, not a 500", async () => {
    const f = await failure(caller().runs.list({ cursor: sealCursor(JSON.stringify({ t: now(), id: "not-a-uuid" })) }));
    expect(f.code).toBe("BAD_REQUEST");
  });

  it("a signed cursor around a year-0 date is a 400 (runs.list and intents.list)", async () => {
    const cursor = sealCursor(JSON.stringify({ t: "0000-01-01T00:00:00.000Z", id: uuid() }));
    expect((await failure(caller().runs.list({ cursor }))).code).toBe("BAD_REQUEST");
    expect((await failure(caller().intents.list({ cursor }))).code).toBe("BAD_REQUEST");
  });

  it("a signed cursor holding NUL is a 400", async () => {
    const cursor = sealCursor(JSON.stringify({ t: now(), id: "a\u0000b" }));
    expect((await failure(caller().runs.list({ cursor }))).code).toBe("BAD_REQUEST");
  });

  it("a year-0 createdFrom filter is a 400 naming the field", async () => {
    const f = await failure(caller().runs.failureGroups({ createdFrom: new Date("0000-01-01T00:00:00Z") }));
    expect(f.code).toBe("BAD_REQUEST");
    expect(f.message).toMatch(/^createdFrom: /);
  });

  it("an audit.list cursor signed around an id just past bigint is a 400 naming the cursor", async () => {
    const f = await failure(caller().audit.list({ cursor: sealCursor("9223372036854775808") }));
    expect(f.code).toBe("BAD_REQUEST");
    expect(f.message).toMatch(/^cursor: /);
  });

  it("NUL in runs.create's agentCommand is a 400 naming the field; tab and newline stay allowed", async () => {
    const f = await failure(caller().runs.create({ companyId: "co-a", taskId: "fz-nul", agent: "a", provider: "codex", agentCommand: "echo a\u0000b" }));
    expect(f.code).toBe("BAD_REQUEST");
    expect(f.message).toMatch(/^agentCommand: /);
    expect((await failure(caller().runs.create({ companyId: "co-a", taskId: "fz-esc", agent: "a", provider: "codex", agentCommand: "echo \u001b[2J" }))).code).toBe("BAD_REQUEST");
    expect((await failure(caller().runs.create({ companyId: "co-a", taskId: "fz-tab", agent: "a", provider: "codex", agentCommand: "echo a\tb\necho c" }))).code).toBe("OK");
  });

  it("a lone surrogate in a text field is a 400 naming it, not a 502 from the provider", async () => {
    const f = await failure(caller().orphans.destroyUnrecorded({ sandboxId: "a\ud800b", confirmName: "x" }));
    expect(f.code).toBe("BAD_REQUEST");
    expect(f.message).toMatch(/^sandboxId: /);
  });

  it("a bigint as a mutation's input is refused and audited, not a 500", async () => {
    const viewer = testUser("viewer");
    expect((await failure(caller(viewer).runs.retry(2n ** 70n as never))).code).toBe("FORBIDDEN");
    expect((await failure(caller().runs.retry(2n ** 70n as never))).code).toBe("BAD_REQUEST");
    const entries = await h.db.db.auditEntry.findMany({ where: { action: "runs.retry", input: { equals: (2n ** 70n).toString() } } });
    expect(entries.map((e) => e.actor).sort()).toEqual([admin.email, viewer.email].sort());
  });

  it("an input with a key named constructor, once audited, does not break reading the audit log", async () => {
    const post = await trpcHttpHandler(
      new Request("http://localhost:3000/api/trpc/users.add", { method: "POST", headers: { "content-type": "application/json" }, body: '{"json":{"email":"c@example.com","constructor":{"prototype":{"x":1}}}}' }),
      { db: h.db.db, services: servicesOf(service), user: admin },
    );
    expect(post.status).toBe(400);
    const read = await trpcHttpHandler(new Request(`http://localhost:3000/api/trpc/audit.list?input=${encodeURIComponent('{"json":{}}')}`), { db: h.db.db, services: servicesOf(service), user: admin });
    expect(read.status).toBe(200);
  });

  it("a wave report holding a key named constructor is stored, and reading the wave back is not a 500", async () => {
    const report = sampleWaveReport("w-20261201T000000-s1");
    report.decoys = [{ id: "d1", kind: "foreign", intact: true, constructor: { prototype: { polluted: true } } }];
    const http = (req: Request) => trpcHttpHandler(req, { db: h.db.db, services: servicesOf(service), user: admin });
    const imported = await http(new Request("http://localhost:3000/api/trpc/waves.import", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ json: { report } }) }));
    expect(imported.status, await imported.clone().text()).toBe(200);
    const read = await http(new Request(`http://localhost:3000/api/trpc/waves.get?input=${encodeURIComponent(JSON.stringify({ json: { id: "w-20261201T000000-s1" } }))}`));
    expect(read.status).toBe(200);
    expect(await read.text()).toContain('"[constructor]"');
  });
});
