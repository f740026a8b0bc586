import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { submitRun } from "../runs/submit";
import { spawnController, type ControllerProcessHandle } from "../test/controller-process";
import { startControllerHarness, waitFor, type ControllerHarness } from "../test/controller";
import { freePort } from "../test/emulator-child";
import { WebhookReceiver } from "../test/webhook-receiver";
import { emitAlert } from "./outbox";
import { newSecret } from "./sign";

/**
 * Alerts from the durable outbox (docs/alerts.md), against a real receiver and real controller
 * processes. Time is compressed 10×: the "receiver down for a minute" is down for 6 s
 * (not listening), then answering 503 for 2 s, with the back-off at 100 ms doubling to a 1 s
 * cap (the defaults are 5 s to 10 min).
 */

let h: ControllerHarness;
let receiver: WebhookReceiver;
let scratch: string;
const secret = newSecret();
const controllers: ControllerProcessHandle[] = [];
const PUBLIC_URL = "https://runwarden.example.com";

const ALERT_ENV = {
  RUNWARDEN_ALERT_RETRY_BASE_MS: "100",
  RUNWARDEN_ALERT_RETRY_CAP_MS: "1000",
  RUNWARDEN_ALERT_MAX_ATTEMPTS: "1000",
  // Generous for a loaded test machine: a request the sender gave up on while the receiver
  // answered 200 would be sent again (same id, dropped by a receiver) and fail the count below.
  RUNWARDEN_ALERT_TIMEOUT_MS: "5000",
  RUNWARDEN_PUBLIC_URL: PUBLIC_URL,
};

beforeAll(async () => {
  h = await startControllerHarness();
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), "rw-alerts-"));
  receiver = new WebhookReceiver(await freePort(), Buffer.from(secret.slice("whsec_".length), "base64"));
});

afterEach(async () => {
  for (const c of controllers.splice(0)) {
    c.kill("SIGKILL");
    await c.exited;
  }
});

afterAll(async () => {
  await receiver?.stop();
  await h?.close();
  fs.rmSync(scratch, { recursive: true, force: true });
});

function controller(env: Record<string, string> = {}): ControllerProcessHandle {
  const c = spawnController({
    DATABASE_URL: h.db.url,
    EMULATOR_URL: h.emu.emulator.url,
    RUNWARDEN_INSTANCE_ID: "inst-a",
    RUNWARDEN_CONTROLLER_HOME: path.join(scratch, `home-${controllers.length}`),
    RUNWARDEN_ALERT_WEBHOOK_URL: receiver.url,
    RUNWARDEN_ALERT_WEBHOOK_SECRET: secret,
    ...ALERT_ENV,
    ...env,
  });
  controllers.push(c);
  return c;
}

/** `n` events straight into the outbox, as a change's transaction writes them. */
async function emitTests(n: number, tag: string): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const id = await emitAlert(h.db.db, "inst-a", { type: "test", data: { endpoint: "env", requestedBy: `${tag}-${i}` } }, `test:${tag}:${i}`);
    ids.push(id!);
  }
  // The same event again (a second controller, a retried transaction) is no new row.
  expect(await emitAlert(h.db.db, "inst-a", { type: "test", data: { endpoint: "env", requestedBy: `${tag}-0` } }, `test:${tag}:0`)).toBeNull();
  return ids;
}

async function allDelivered(eventIds: string[], timeoutMs = 60_000) {
  return waitFor(
    `${eventIds.length} deliveries to be delivered`,
    async () => {
      const rows = await h.db.db.alertDelivery.findMany({ where: { eventId: { in: eventIds } } });
      return rows.length === eventIds.length && rows.every((r) => r.status === "delivered") ? rows : null;
    },
    timeoutMs,
  );
}

function expectExactlyOnce(eventIds: string[]) {
  const twice = eventIds.filter((id) => receiver.accepted.get(id) !== 1);
  if (twice.length) console.log("accepted other than once:", twice, receiver.arrivals.filter((a) => twice.includes(a.id)).map((a) => ({ id: a.id, at: a.at, answered: a.answered })));
  for (const id of eventIds) expect(receiver.accepted.get(id), `event ${id}`).toBe(1);
  expect(receiver.duplicatesAfterSuccess).toBe(0);
  expect(receiver.overlaps).toBe(0);
  expect(receiver.arrivals.every((a) => a.signatureValid)).toBe(true);
}

describe("alert delivery from the outbox", () => {
  it("receiver down, then 503, then up: a failed run's alert and 20 more each delivered once, signed, by two controllers", async () => {
    await receiver.setMode("down");
    const a = controller();
    const b = controller();
    await Promise.all([a.ready, b.ready]);
    // The headless endpoint: upserted once by the two controllers that started together.
    const endpoints = await h.db.db.alertEndpoint.findMany({ where: { instanceId: "inst-a" } });
    expect(endpoints).toHaveLength(1);
    expect(endpoints[0]).toMatchObject({ source: "env", url: receiver.url, secret, events: [], enabled: true });

    // A run that fails for real: the emulator rejects its session.
    const run = await submitRun(h.db.db, "inst-a", { companyId: "co-1", taskId: "alert-reject", agent: "planner", provider: "codex", turns: 1 }, { id: "test", role: "operator" });
    await h.emu.admin.setFault({ match: { runId: run.id }, fault: { kind: "reject", providerFailure: { kind: "requires_action", category: "permission", message: "bwrap: loopback: Failed RTM_NEWADDR" } } });
    const failed = await waitFor("the run to fail", async () => {
      const r = await h.db.db.run.findUniqueOrThrow({ where: { id: run.id } });
      return r.status === "failed" ? r : null;
    }, 30_000);
    const runEvent = await h.db.db.alertEvent.findUniqueOrThrow({ where: { dedupeKey: `run.failed:${run.id}` } });
    const ids = [runEvent.id, ...(await emitTests(20, "down"))];

    const downAt = Date.now();
    await waitFor("every delivery to have failed at least twice", async () => (await h.db.db.alertDelivery.count({ where: { eventId: { in: ids }, attempts: { gte: 2 } } })) === ids.length, 20_000);
    await new Promise((r) => setTimeout(r, Math.max(0, 6_000 - (Date.now() - downAt))));
    const whileDown = await h.db.db.alertDelivery.findMany({ where: { eventId: { in: ids } } });
    expect(whileDown.every((d) => d.status === "pending" && d.lastError !== null)).toBe(true);
    expect(receiver.arrivals).toHaveLength(0);

    await receiver.setMode("503");
    await waitFor("503s to be seen", async () => (await h.db.db.alertDelivery.count({ where: { eventId: { in: ids }, lastStatus: 503 } })) === ids.length, 20_000);
    await new Promise((r) => setTimeout(r, 2_000));
    const arrivedBeforeUp = receiver.arrivals.length;
    await receiver.setMode("up");
    const upAt = Date.now();
    const rows = await allDelivered(ids);
    const upToDelivered = Date.now() - upAt;

    expectExactlyOnce(ids);
    const attempts = rows.map((r) => r.attempts);
    console.log(
      `alerts: ${ids.length} events, down ${Date.now() - downAt - upToDelivered} ms (6 s not listening + 503s), ${arrivedBeforeUp} requests answered 503, all delivered ${upToDelivered} ms after the receiver came up; attempts per delivery min ${Math.min(...attempts)} max ${Math.max(...attempts)}; ${receiver.arrivals.length} requests in all, ${receiver.delivered} unique ids accepted, 0 duplicates`,
    );

    // The run's alert as delivered: Slack-shaped, with its code, owner, Retry and link.
    const delivered = receiver.arrivals.find((x) => x.id === runEvent.id && x.answered === 200)!;
    const payload = JSON.parse(delivered.body) as { type: string; id: string; occurredAt: string; data: Record<string, unknown>; text: string };
    console.log(`run.failed as delivered:\nwebhook-id: ${delivered.id}\nwebhook-timestamp: ${delivered.timestamp}\nwebhook-signature: ${delivered.signature}\n${JSON.stringify(payload, null, 2)}`);
    expect(payload).toMatchObject({
      type: "run.failed",
      id: runEvent.id,
      data: { runId: run.id, code: "native_provider_startup_rejected", owner: "board", canRetry: true, companyId: "co-1", taskId: "alert-reject", url: `${PUBLIC_URL}/runs/${run.id}` },
    });
    expect(payload.text).toContain("native_provider_startup_rejected (owner: board; Retry offered)");
    expect(payload.text).toContain(`${PUBLIC_URL}/runs/${run.id}`);
    expect(failed.failureCode).toBe("native_provider_startup_rejected");
    // Every retry of one delivery carried the same id.
    expect(new Set(receiver.arrivals.filter((x) => x.body.includes(run.id)).map((x) => x.id))).toEqual(new Set([runEvent.id]));
  }, 120_000);

  it("a controller SIGKILLed mid-delivery loses nothing: the claim lapses and the next sender delivers under the same id", async () => {
    await receiver.setMode("hang");
    // A longer timeout, so the requests are surely in flight when the kill comes (claim: 2 × 3 s + 1 s).
    // The events first: the controller claims all ten in its first pass.
    const ids = await emitTests(10, "kill");
    const a = controller({ RUNWARDEN_ALERT_TIMEOUT_MS: "3000" });
    await a.ready;
    await waitFor("all ten requests in flight", async () => receiver.hanging >= 10, 20_000);
    const claimed = await h.db.db.alertDelivery.findMany({ where: { eventId: { in: ids } } });
    expect(claimed.every((d) => d.attempts === 1 && d.claimedUntil !== null && d.status === "pending")).toBe(true);
    a.kill("SIGKILL");
    await a.exited;
    await receiver.setMode("up");
    const killedAt = Date.now();

    const b = controller({ RUNWARDEN_ALERT_TIMEOUT_MS: "3000" });
    await b.ready;
    const rows = await allDelivered(ids);
    const tookMs = Date.now() - killedAt;
    expectExactlyOnce(ids);
    // The killed attempt was counted; the next sender waited for the claim to lapse.
    expect(rows.every((r) => r.attempts === 2)).toBe(true);
    const firstDelivery = Math.min(...receiver.arrivals.filter((x) => ids.includes(x.id) && x.answered === 200).map((x) => x.at));
    expect(firstDelivery).toBeGreaterThanOrEqual(Math.min(...claimed.map((d) => d.claimedUntil!.getTime())) - 200);
    console.log(`alerts: SIGKILL mid-delivery → all 10 delivered ${tookMs} ms after the kill (claim lease 7 s), attempts 2 each, none twice`);
  }, 90_000);

  it("a provider outage (every call answered 502): provider.outage_started goes out while it lasts, provider.outage_ended after, one each", async () => {
    await receiver.setMode("up");
    // Paged as soon as a probe confirms it (the default waits 30 s of outage first: docs/alerts.md).
    const c = controller({ RUNWARDEN_BREAKER_PROBE_MS: "200", RUNWARDEN_BREAKER_PROBE_CAP_MS: "1000", RUNWARDEN_OUTAGE_ALERT_MIN_MS: "0" });
    await c.ready;
    await h.emu.admin.setFault({ fault: { kind: "http_error", status: 502 } });
    try {
      // A run makes the controller call the provider; the 502 opens its breaker.
      await submitRun(h.db.db, "inst-a", { companyId: "co-1", taskId: "alert-outage", agent: "planner", provider: "codex", turns: 1 }, { id: "test", role: "operator" });
      const started = await waitFor("provider.outage_started delivered during the outage", async () => {
        const e = await h.db.db.alertEvent.findFirst({ where: { type: "provider.outage_started" } });
        return e && receiver.accepted.get(e.id) === 1 ? e : null;
      }, 30_000);
      expect(await h.db.db.alertEvent.count({ where: { type: "provider.outage_ended" } })).toBe(0);
      expect((started.payload as { text: string }).text).toMatch(/^Runwarden: provider emulator unavailable since .*; runs wait for it/);
    } finally {
      await h.emu.admin.clearFaults();
    }
    const ended = await waitFor("provider.outage_ended delivered", async () => {
      const e = await h.db.db.alertEvent.findFirst({ where: { type: "provider.outage_ended" } });
      return e && receiver.accepted.get(e.id) === 1 ? e : null;
    }, 30_000);
    expect((ended.payload as { text: string }).text).toMatch(/^Runwarden: provider emulator is back after \d+ s/);
    expect(await h.db.db.alertEvent.count({ where: { type: { in: ["provider.outage_started", "provider.outage_ended"] } } })).toBe(2);
  }, 90_000);

  it("three controllers sending 150 events with the receiver up: each one request, never two at once", async () => {
    await receiver.setMode("up");
    const before = receiver.arrivals.length;
    const cs = [controller(), controller(), controller()];
    await Promise.all(cs.map((c) => c.ready));
    const ids = await emitTests(150, "many");
    const started = Date.now();
    await allDelivered(ids);
    expectExactlyOnce(ids);
    const mine = receiver.arrivals.slice(before).filter((x) => ids.includes(x.id));
    expect(mine).toHaveLength(150);
    const senders = await h.db.db.alertDelivery.findMany({ where: { eventId: { in: ids } }, select: { attempts: true } });
    expect(senders.every((s) => s.attempts === 1)).toBe(true);
    console.log(`alerts: 3 controllers, 150 events, 150 requests (one per id), delivered in ${Date.now() - started} ms`);
  }, 90_000);
});
