import crypto from "node:crypto";
import { TRPCError } from "@trpc/server";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { auditExportResponse } from "../audit/read";
import { authFor } from "../auth/auth";
import { addUser } from "../auth/users";
import { instanceIdOf } from "../db/installation";
import { redactUrl } from "../lib/redact";
import type { SessionUser } from "../shared/roles";
import { withTestDatabase } from "../test/context";
import { freePort } from "../test/emulator-child";
import { testUser, TEST_ADMIN } from "../test/users";
import { WebhookReceiver } from "../test/webhook-receiver";
import { createCaller } from "../trpc/root";
import { createTRPCContext } from "../trpc/trpc";
import { deliverDueAlerts, NO_ANSWER } from "./deliver";
import type { DestinationPolicy } from "./destinations";
import { upsertEnvEndpoint } from "./endpoints";

/**
 * Alerts an on-call can trust (docs/alerts.md "Secrets", "Where a webhook may go"): an
 * endpoint's URL is its credential and never reaches the audit log, its export or an answer
 * whole; a webhook cannot be aimed inside the controllers' network, neither when it is added
 * nor when a DNS answer changes afterwards; and a send without an answer says only that.
 */

const t = withTestDatabase();
const NONE: DestinationPolicy = { allow: [] };
const LOOPBACK: DestinationPolicy = { allow: ["127.0.0.0/8", "::1/128"] };
const caller = (user: SessionUser = TEST_ADMIN, alertDestinations: DestinationPolicy = NONE) =>
  createCaller(() => createTRPCContext({ user, headers: new Headers(), db: t.current.db, alertDestinations }));
const SENDER = { baseMs: 50, capMs: 100, maxAttempts: 5, timeoutMs: 2_000, batch: 16 };
const SLACK = "https://hooks.slack.com/services/T000/B000/XXXXXXXX";
const SLACK_2 = "https://hooks.slack.com/services/T000/B000/YYYYYYYY";
const ORIGIN = "http://localhost:3000";
const secret = `whsec_${crypto.randomBytes(24).toString("base64")}`;
let receiver: WebhookReceiver;

beforeAll(async () => {
  receiver = new WebhookReceiver(await freePort(), Buffer.from(secret.slice(6), "base64"), 0);
  await receiver.setMode("up");
});
afterAll(() => receiver.stop());

async function refusal(p: Promise<unknown>): Promise<{ code: string; message: string }> {
  const err = await p.then(() => null, (e: unknown) => e);
  return err instanceof TRPCError ? { code: err.code, message: err.message } : { code: "OK", message: "" };
}

async function send(destinations: DestinationPolicy) {
  return deliverDueAlerts(t.current.db, await instanceIdOf(t.current.db), { ...SENDER, destinations }, pino({ level: "silent" }));
}

async function signIn(email: string, password: string): Promise<string> {
  const res = await authFor(t.current.db).handler(
    new Request(`${ORIGIN}/api/auth/sign-in/email`, {
      method: "POST",
      headers: { "content-type": "application/json", origin: ORIGIN, "x-forwarded-for": "203.0.113.61" },
      body: JSON.stringify({ email, password }),
    }),
  );
  expect(res.status).toBe(200);
  return res.headers.getSetCookie().map((c) => c.split(";")[0]).join("; ");
}

describe("a webhook URL is a secret", () => {
  it("a Slack URL added, changed and deleted never appears whole in audit.list, the export or an answer; the secret only once, at creation", async () => {
    const { db } = t.current;
    const created = await caller().alerts.create({ name: "slack", url: SLACK });
    expect(created.secret).toMatch(/^whsec_/);
    expect(created.endpoint.destination).toBe(`https://hooks.slack.com/…#${crypto.createHash("sha256").update(SLACK).digest("hex").slice(0, 8)}`);
    const generated = created.secret!;
    await caller().alerts.update({ id: created.endpoint.id, url: SLACK_2 });
    await caller().alerts.test({ id: created.endpoint.id });
    // Refused by validation before the service runs: the transport layer audits the raw input.
    expect((await refusal(caller().alerts.create({ name: "slack-short", url: SLACK, secret: "short" }))).code).toBe("BAD_REQUEST");
    // An entry written before URLs were redacted is shown redacted too.
    await db.auditEntry.create({ data: { actor: "old@example.com", role: "admin", action: "alerts.create", targetType: "alert_endpoint", targetId: "old", input: { name: "old", url: SLACK }, outcome: "ok" } });
    const answers = [JSON.stringify(created.endpoint), JSON.stringify(await caller().alerts.list()), JSON.stringify(await caller().alerts.deliveries({ endpointId: created.endpoint.id }))];
    await caller().alerts.delete({ id: created.endpoint.id });

    const viewer = testUser("viewer");
    expect(viewer.scope).toEqual({ all: true });
    const audit = JSON.stringify(await caller(viewer).audit.list({ pageSize: 200 }));
    await addUser(db, { email: "viewer-all@example.com", role: "viewer", companies: ["*"], password: "viewer all password" }, { id: "test", role: "admin" }, { all: true });
    const cookie = await signIn("viewer-all@example.com", "viewer all password");
    const exports = await Promise.all(
      ["csv", "json"].map(async (format) => {
        const res = await auditExportResponse(db, new Request(`${ORIGIN}/api/audit/export?format=${format}`, { headers: { cookie } }));
        expect(res.status).toBe(200);
        return res.text();
      }),
    );
    for (const [where, text] of [["audit.list", audit], ["csv export", exports[0]!], ["json export", exports[1]!], ...answers.map((a, i) => [`answer ${i}`, a] as const)] as const) {
      for (const whole of [SLACK, SLACK_2]) expect(text, where).not.toContain(whole.slice("https://hooks.slack.com".length));
      expect(text, where).not.toContain(generated.slice("whsec_".length));
    }
    for (const text of [audit, exports[1]!]) {
      expect(text).toContain(redactUrl(SLACK));
      expect(text).toContain(redactUrl(SLACK_2));
    }
    // Stored redacted too: the database's audit rows hold no whole URL (the old one above excepted).
    const stored = await db.auditEntry.findMany({ where: { action: { startsWith: "alerts." }, NOT: { targetId: "old" } } });
    expect(JSON.stringify(stored.map((e) => [e.input, e.detail]))).not.toContain("/services/T000");
    // A person who is not an admin of every company gets no endpoint answer at all.
    expect((await refusal(caller(viewer).alerts.list())).code).toBe("FORBIDDEN");
    expect((await refusal(caller(testUser("admin", ["co-a"])).alerts.list())).code).toBe("FORBIDDEN");
  });
});

describe("a webhook cannot be aimed inside", () => {
  it.each([
    ["http://127.0.0.1:PORT/hook", /^url: 127\.0\.0\.1 is a loopback address; allow it with RUNWARDEN_ALERT_ALLOW_NETWORKS$/],
    ["http://169.254.169.254/latest/meta-data/", /^url: 169\.254\.169\.254 is the cloud metadata address; allow it with RUNWARDEN_ALERT_ALLOW_NETWORKS$/],
    ["http://[::1]/hook", /^url: ::1 is a loopback address; /],
    ["http://10.1.2.3/hook", /^url: 10\.1\.2\.3 is a private address; /],
    ["http://100.64.0.7/hook", /^url: 100\.64\.0\.7 is a carrier-grade NAT address/],
    ["http://[fd00:ec2::254]/", /^url: fd00:ec2::254 is the cloud metadata address; /],
    // A name, resolved as the controllers' system resolves it (the hosts file here).
    ["http://localhost:PORT/hook", /^url: localhost resolves to (127\.0\.0\.1|::1), a loopback address; allow it with RUNWARDEN_ALERT_ALLOW_NETWORKS$/],
  ])("refuses %s when it is added or changed, saying why; the refusal is audited without the URL", async (template, message) => {
    const url = template.replace("PORT", String(receiver.port));
    const added = await refusal(caller().alerts.create({ name: "inside", url }));
    expect(added.code).toBe("BAD_REQUEST");
    expect(added.message).toMatch(message);
    const { endpoint } = await caller().alerts.create({ name: "outside", url: "https://hooks.example.invalid/in" });
    const changed = await refusal(caller().alerts.update({ id: endpoint.id, url }));
    expect(changed).toEqual(added);
    const refused = await t.current.db.auditEntry.findFirstOrThrow({ where: { action: "alerts.create", outcome: "refused" }, orderBy: { id: "desc" } });
    expect(refused.input).toMatchObject({ name: "inside", url: redactUrl(url) });
    expect(refused.detail).toMatchObject({ reason: added.message });
    await caller().alerts.delete({ id: endpoint.id });
  });

  it("an operator's RUNWARDEN_ALERT_ALLOW_NETWORKS lets an address through", async () => {
    const { endpoint } = await caller(TEST_ADMIN, LOOPBACK).alerts.create({ name: "allowed", url: receiver.url });
    expect(endpoint.destination).toBe(redactUrl(receiver.url));
    await caller().alerts.delete({ id: endpoint.id });
  });

  it("a destination that passed when added but resolves to a refused address at send time is not contacted", async () => {
    const { db } = t.current;
    const instanceId = await instanceIdOf(db);
    // As it stands after its name's DNS answer changed to the controllers' own loopback (the
    // hosts file's localhost here); the receiver listens there.
    const row = await db.alertEndpoint.create({ data: { instanceId, name: "rebound", url: `http://localhost:${receiver.port}/hook`, secret, events: [], source: "console", createdBy: "test" } });
    const test = await caller().alerts.test({ id: row.id });
    const before = receiver.arrivals.length;
    await send(NONE);
    expect(receiver.arrivals.length).toBe(before);
    const [log] = await caller().alerts.deliveries({ endpointId: row.id });
    expect(log).toMatchObject({ id: test.deliveryId, status: "pending", attempts: 1, lastStatus: null, lastError: "not delivered: refused, the name resolves to a loopback address; allow it with RUNWARDEN_ALERT_ALLOW_NETWORKS" });
    // The same delivery with the operator's allow-list reaches the receiver: it was the policy that kept it out.
    await new Promise((r) => setTimeout(r, 150));
    await send(LOOPBACK);
    expect(receiver.accepted.get(test.eventId)).toBe(1);
    expect((await caller().alerts.deliveries({ endpointId: row.id }))[0]).toMatchObject({ status: "delivered", attempts: 2, lastStatus: 200 });
  });

  it("the operator's own endpoint (RUNWARDEN_ALERT_WEBHOOK_URL) is sent wherever it points, and its URL is not changed in the console", async () => {
    const { db } = t.current;
    const { id } = await upsertEnvEndpoint(db, await instanceIdOf(db), receiver.url, secret, { id: "controller:test", role: "controller" });
    const test = await caller().alerts.test({ id });
    await send(NONE);
    expect(receiver.accepted.get(test.eventId)).toBe(1);
    const changed = await refusal(caller(TEST_ADMIN, LOOPBACK).alerts.update({ id, url: "http://127.0.0.2:9/x" }));
    expect(changed).toEqual({ code: "BAD_REQUEST", message: expect.stringContaining("this endpoint's URL is RUNWARDEN_ALERT_WEBHOOK_URL") });
    const created = await db.auditEntry.findFirstOrThrow({ where: { action: "alerts.env_create", targetId: id } });
    expect(created.input).toMatchObject({ url: redactUrl(receiver.url) });
    await caller().alerts.delete({ id });
  });

  it("alerts.test against a closed port: the log says not delivered, no answer, without the connection's error", async () => {
    const closedPort = await freePort();
    const { endpoint } = await caller(TEST_ADMIN, LOOPBACK).alerts.create({ name: "closed", url: `http://127.0.0.1:${closedPort}/hook` });
    const test = await caller().alerts.test({ id: endpoint.id });
    await send(LOOPBACK);
    const [log] = await caller().alerts.deliveries({ endpointId: endpoint.id });
    expect(log).toMatchObject({ id: test.deliveryId, status: "pending", attempts: 1, lastStatus: null, lastError: NO_ANSWER });
    expect(JSON.stringify(log)).not.toMatch(/ECONN|EHOST|ENET|timed out/);
    // Not only shown so: the sender stores nothing more (the controller's log has the errno).
    expect(await t.current.db.alertDelivery.findUniqueOrThrow({ where: { id: test.deliveryId } })).toMatchObject({ lastStatus: null, lastError: NO_ANSWER });
    // A row written before this rule, holding the errno, is shown the same way.
    await t.current.db.alertDelivery.update({ where: { id: test.deliveryId }, data: { status: "failed", lastError: "ECONNREFUSED; gave up after 5 attempts" } });
    expect((await caller().alerts.deliveries({ endpointId: endpoint.id }))[0]).toMatchObject({ status: "failed", lastError: `${NO_ANSWER}; gave up after 5 attempts` });
  });
});
