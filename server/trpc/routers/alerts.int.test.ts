import crypto from "node:crypto";
import { TRPCError } from "@trpc/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pino from "pino";
import { deliverDueAlerts } from "../../alerts/deliver";
import { instanceIdOf } from "../../db/installation";
import { redactUrl } from "../../lib/redact";
import { renderMetrics } from "../../metrics";
import { withTestDatabase } from "../../test/context";
import { freePort } from "../../test/emulator-child";
import { testUser, TEST_ADMIN } from "../../test/users";
import { WebhookReceiver } from "../../test/webhook-receiver";
import type { SessionUser } from "../../shared/roles";
import { createCaller } from "../root";
import { createTRPCContext } from "../trpc";

/** The console's alerts: add, edit, enable/disable, test, the delivery log, delete; every mutation audited; secrets shown once. */

const t = withTestDatabase();
// The receiver listens on loopback, which only an operator's RUNWARDEN_ALERT_ALLOW_NETWORKS lets an endpoint reach (docs/alerts.md).
const LOOPBACK_ALLOWED = { allow: ["127.0.0.1/32"] };
const caller = (user: SessionUser = TEST_ADMIN) => createCaller(() => createTRPCContext({ user, headers: new Headers(), db: t.current.db, alertDestinations: LOOPBACK_ALLOWED }));
const SENDER = { baseMs: 100, capMs: 1_000, maxAttempts: 2, timeoutMs: 2_000, batch: 16, destinations: LOOPBACK_ALLOWED };
let receiver: WebhookReceiver;
const secret = `whsec_${crypto.randomBytes(24).toString("base64")}`;

beforeAll(async () => {
  receiver = new WebhookReceiver(await freePort(), Buffer.from(secret.slice(6), "base64"), 0);
});
afterAll(() => receiver.stop());

async function code(p: Promise<unknown>) {
  const err = await p.then(() => null, (e: unknown) => e);
  return err instanceof TRPCError ? err.code : "OK";
}

async function send() {
  return deliverDueAlerts(t.current.db, await instanceIdOf(t.current.db), SENDER, pino({ level: "silent" }));
}

describe("alerts router", () => {
  it("adds an endpoint, tests it through the outbox, shows the delivery, and audits each step", async () => {
    await receiver.setMode("up");
    const created = await caller().alerts.create({ name: "ops", url: receiver.url, secret, events: ["run.failed", "wave.failed"] });
    expect(created.secret).toBe(secret);
    expect(created.endpoint).toMatchObject({ name: "ops", destination: redactUrl(receiver.url), events: ["run.failed", "wave.failed"], enabled: true, source: "console", createdBy: TEST_ADMIN.email });
    expect(created.endpoint.destination).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/…#[0-9a-f]{8}$/);
    expect(created.endpoint.secretHint).toMatch(/^whsec_…#[0-9a-f]{8}$/);
    const listed = await caller().alerts.list();
    expect(JSON.stringify(listed)).not.toContain(secret.slice(6));

    const test = await caller().alerts.test({ id: created.endpoint.id });
    expect((await caller().alerts.deliveries({ endpointId: created.endpoint.id }))[0]).toMatchObject({ id: test.deliveryId, type: "test", status: "pending", attempts: 0 });
    await send();
    const [log] = await caller().alerts.deliveries({ endpointId: created.endpoint.id });
    expect(log).toMatchObject({ id: test.deliveryId, eventId: test.eventId, type: "test", status: "delivered", attempts: 1, lastStatus: 200, lastError: null });
    expect(log!.text).toBe(`Runwarden: test alert for endpoint "ops", sent by ${TEST_ADMIN.email}.`);
    expect(receiver.accepted.get(test.eventId)).toBe(1);
    expect(receiver.arrivals.every((a) => a.signatureValid)).toBe(true);
    expect((await caller().alerts.list())[0]!.deliveries).toEqual({ pending: 0, delivered: 1, failed: 0 });

    const audit = await t.current.db.auditEntry.findMany({ where: { targetId: created.endpoint.id }, orderBy: { id: "asc" } });
    expect(audit.map((a) => a.action)).toEqual(["alerts.create", "alerts.test"]);
    expect(JSON.stringify(audit.map((a) => [a.input, a.detail]))).not.toContain(secret.slice(6));
  });

  it("a receiver that keeps failing: the delivery is given up (failed) with what it saw, and shown", async () => {
    const { endpoint } = await caller().alerts.create({ name: "broken", url: receiver.url, secret });
    await receiver.setMode("503");
    const test = await caller().alerts.test({ id: endpoint.id });
    await send();
    await new Promise((r) => setTimeout(r, 150));
    await send();
    const [log] = await caller().alerts.deliveries({ endpointId: endpoint.id });
    expect(log).toMatchObject({ id: test.deliveryId, status: "failed", attempts: 2, lastStatus: 503, lastError: "HTTP 503; gave up after 2 attempts" });
    await receiver.setMode("up");
  });

  it("/api/metrics counts the deliveries by status", async () => {
    const { body } = await renderMetrics(t.current.db);
    expect(body).toContain('runwarden_alert_deliveries{status="delivered"} 1\n');
    expect(body).toContain('runwarden_alert_deliveries{status="failed"} 1\n');
    expect(body).toContain('runwarden_alert_deliveries{status="pending"} 0\n');
  });

  it("edits, rotates the secret (shown once), disables, enables and deletes; all audited", async () => {
    const { endpoint } = await caller().alerts.create({ name: "edit-me", url: "https://hooks.example.com/a" });
    const edited = await caller().alerts.update({ id: endpoint.id, name: "edited", url: "https://hooks.example.com/b", events: ["orphans.cost_over"], rotateSecret: true });
    expect(edited.secret).toMatch(/^whsec_/);
    expect(edited.endpoint).toMatchObject({ name: "edited", destination: redactUrl("https://hooks.example.com/b"), events: ["orphans.cost_over"] });
    expect((await caller().alerts.setEnabled({ id: endpoint.id, enabled: false })).endpoint.enabled).toBe(false);
    expect((await caller().alerts.setEnabled({ id: endpoint.id, enabled: true })).endpoint.enabled).toBe(true);
    expect(await caller().alerts.delete({ id: endpoint.id })).toEqual({ id: endpoint.id, deleted: true });
    expect(await code(caller().alerts.delete({ id: endpoint.id }))).toBe("NOT_FOUND");
    const audit = await t.current.db.auditEntry.findMany({ where: { targetId: endpoint.id, outcome: "ok" }, orderBy: { id: "asc" } });
    expect(audit.map((a) => a.action)).toEqual(["alerts.create", "alerts.update", "alerts.disable", "alerts.enable", "alerts.delete"]);
  });

  it("refuses what is not a webhook: a non-http URL, an unknown event type, a short secret", async () => {
    expect(await code(caller().alerts.create({ name: "x", url: "file:///etc/passwd" }))).toBe("BAD_REQUEST");
    expect(await code(caller().alerts.create({ name: "x", url: "https://a.example.com", events: ["run.exploded" as "run.failed"] }))).toBe("BAD_REQUEST");
    expect(await code(caller().alerts.create({ name: "x", url: "https://a.example.com", secret: "short" }))).toBe("BAD_REQUEST");
  });

  it("an admin who sees only some companies cannot configure alerts (they carry every company's runs); an operator cannot at all", async () => {
    expect(await code(caller(testUser("admin", ["co-a"])).alerts.list())).toBe("FORBIDDEN");
    expect(await code(caller(testUser("admin", ["co-a"])).alerts.create({ name: "x", url: "https://a.example.com" }))).toBe("FORBIDDEN");
    expect(await code(caller(testUser("operator")).alerts.list())).toBe("FORBIDDEN");
  });
});
