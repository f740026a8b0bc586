import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { submitRun } from "../runs/submit";
import { controllerProcesses } from "../test/controller-process";
import { startControllerHarness, waitFor, type ControllerHarness } from "../test/controller";
import { freePort } from "../test/emulator-child";
import { WebhookReceiver } from "../test/webhook-receiver";
import { newSecret } from "./sign";

/**
 * run.succeeded across a controller's death (docs/alerts.md, "Run endings"), with real
 * controller processes, a real receiver and PostgreSQL: a run whose controller is SIGKILLed
 * between its turns is recovered by the next controller and succeeds there; the receiver's
 * opted-in endpoint gets the event once, and the `env` endpoint (the default set) never does.
 */

let h: ControllerHarness;
let receiver: WebhookReceiver;
const secret = newSecret();
const { controller } = controllerProcesses(() => h);

/** Delivery compressed as in delivery.int.test.ts; the console endpoint's loopback receiver allowed. */
const ALERT_ENV = {
  RUNWARDEN_ALERT_RETRY_BASE_MS: "100",
  RUNWARDEN_ALERT_RETRY_CAP_MS: "1000",
  RUNWARDEN_ALERT_TIMEOUT_MS: "5000",
  RUNWARDEN_ALERT_ALLOW_NETWORKS: "127.0.0.1",
};

beforeAll(async () => {
  h = await startControllerHarness();
  receiver = new WebhookReceiver(await freePort(), Buffer.from(secret.slice("whsec_".length), "base64"));
  await receiver.setMode("up");
});
afterAll(async () => {
  await receiver?.stop();
  await h?.close();
});

describe("run.succeeded after a SIGKILL mid-run", () => {
  it("the run recovers on a second controller and succeeds; the opted-in receiver gets run.succeeded exactly once", async () => {
    const t0 = Date.now();
    // Opted in: named run.succeeded. The `env` endpoint the controllers upsert (same receiver) has the default set.
    const optedIn = await h.db.db.alertEndpoint.create({ data: { instanceId: "inst-a", name: "ends", url: receiver.url, secret, events: ["run.succeeded"], enabled: true, source: "console", createdBy: "test" } });
    const env = { ...ALERT_ENV, RUNWARDEN_ALERT_WEBHOOK_URL: receiver.url, RUNWARDEN_ALERT_WEBHOOK_SECRET: secret };
    const r = await submitRun(h.db.db, "inst-a", { companyId: "co-1", taskId: "ends-after-kill", agent: "a", provider: "codex", sandboxMode: "warm", turns: 2 }, { id: "test", role: "board" });

    // A pause before each turn long enough that the kill lands between turn 1 and turn 2.
    const a = await controller({ ...env, RUNWARDEN_TURN_MS: "1500" });
    await waitFor("turn 1 done", async () => (await h.db.db.run.findUniqueOrThrow({ where: { id: r.id } })).turnsDone >= 1, 15_000);
    a.kill("SIGKILL");
    expect((await a.exited).signal).toBe("SIGKILL");
    const killed = await h.db.db.run.findUniqueOrThrow({ where: { id: r.id } });
    expect(killed.status).toBe("running");
    expect(await h.db.db.alertEvent.count({ where: { dedupeKey: `run.succeeded:${r.id}` } })).toBe(0);

    const b = await controller({ ...env, RUNWARDEN_RECOVERY_BACKOFF_MS: "200" });
    const done = await waitFor("the run to settle", async () => {
      const row = await h.db.db.run.findUniqueOrThrow({ where: { id: r.id } });
      return row.status === "succeeded" || row.status === "failed" ? row : null;
    }, 20_000);
    expect(done.status).toBe("succeeded");
    expect(done.turnsDone).toBe(2);
    // It was recovered by the second controller, not finished by the first.
    const [bootA, bootB] = await Promise.all([a, b].map(async (p) => (await h.db.db.controllerProcess.findFirstOrThrow({ where: { pid: p.pid } })).bootId));
    expect(bootB).not.toBe(bootA);
    const recovered = await h.db.db.runEvent.findFirst({ where: { runId: r.id, type: "recovery_started" } });
    expect(recovered?.bootId).toBe(bootB);
    expect((await h.db.db.runEvent.findFirstOrThrow({ where: { runId: r.id, type: "run_succeeded" } })).bootId).toBe(bootB);

    const event = await h.db.db.alertEvent.findUniqueOrThrow({ where: { dedupeKey: `run.succeeded:${r.id}` }, include: { deliveries: true } });
    expect(event.deliveries.map((d) => d.endpointId)).toEqual([optedIn.id]);
    await waitFor("run.succeeded delivered", async () => receiver.accepted.get(event.id) === 1, 10_000);
    const deliveredAt = Date.now();
    // A few more seconds of delivery ticks (one a second per controller): nothing is sent again.
    await new Promise((res) => setTimeout(res, 3_000));
    expect(receiver.accepted.get(event.id)).toBe(1);
    const arrivals = receiver.arrivals.filter((x) => x.id === event.id);
    expect(arrivals).toHaveLength(1);
    expect(arrivals[0]!.signatureValid).toBe(true);
    expect(receiver.duplicatesAfterSuccess).toBe(0);
    // The `env` endpoint (default set) was sent no run ending of this run.
    expect(receiver.arrivals.filter((x) => x.body.includes(r.id))).toHaveLength(1);
    const payload = JSON.parse(arrivals[0]!.body) as { type: string; data: Record<string, unknown>; text: string };
    expect(payload).toMatchObject({ type: "run.succeeded", data: { runId: r.id, taskId: "ends-after-kill", companyId: "co-1", externalId: null, status: "succeeded", failureCode: null } });
    expect(await h.db.db.alertDelivery.findMany({ where: { eventId: event.id } })).toMatchObject([{ endpointId: optedIn.id, status: "delivered", attempts: 1 }]);
    console.log(`run.succeeded: run recovered after SIGKILL and succeeded, delivered once ${deliveredAt - t0} ms after submit; still once 3 s later; ${Date.now() - t0} ms in all`);
  }, 40_000);
});
