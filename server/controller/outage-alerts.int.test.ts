import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { newSecret } from "../alerts/sign";
import type { Db } from "../db/client";
import { ProviderError } from "../providers/errors";
import { submitRun } from "../runs/submit";
import { spawnController, type ControllerProcessHandle } from "../test/controller-process";
import { startControllerHarness, waitFor, type ControllerHarness } from "../test/controller";
import { freePort } from "../test/emulator-child";
import { WebhookReceiver } from "../test/webhook-receiver";

/**
 * Alerts an on-call can trust (docs/alerts.md, docs/rules.md §2.8): real controller processes,
 * the emulator's faults and a real webhook receiver. Thresholds compressed by configuration:
 * 3 recovery attempts 100 ms apart (default 5, 2 s), probes from 100 ms to a 500 ms cap
 * (default 1 s to 30 s), and an outage paged after 0 s (a) or 1 s (b) (default 30 s).
 */

let h: ControllerHarness;
let receiver: WebhookReceiver;
let scratch: string;
const secret = newSecret();
const controllers: ControllerProcessHandle[] = [];

const ENV = {
  RUNWARDEN_RECOVERY_MAX_ATTEMPTS: "3",
  RUNWARDEN_RECOVERY_BACKOFF_MS: "100",
  RUNWARDEN_BREAKER_PROBE_MS: "100",
  RUNWARDEN_BREAKER_PROBE_CAP_MS: "500",
  RUNWARDEN_ALERT_RETRY_BASE_MS: "100",
  RUNWARDEN_ALERT_RETRY_CAP_MS: "1000",
  RUNWARDEN_ALERT_MAX_ATTEMPTS: "1000",
  RUNWARDEN_ALERT_TIMEOUT_MS: "5000",
};

beforeAll(async () => {
  h = await startControllerHarness();
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), "rw-outage-alerts-"));
  receiver = new WebhookReceiver(await freePort(), Buffer.from(secret.slice("whsec_".length), "base64"));
  await receiver.setMode("up");
});

afterEach(async () => {
  for (const c of controllers.splice(0)) {
    c.kill("SIGKILL");
    await c.exited;
  }
  await h.emu.admin.clearFaults();
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
    ...ENV,
    ...env,
  });
  controllers.push(c);
  return c;
}

/** The outage alerts the receiver accepted, once per webhook id, in the order they arrived. */
function outageAlerts(): Array<{ type: string; outageId: string; id: string }> {
  const seen = new Set<string>();
  const out: Array<{ type: string; outageId: string; id: string }> = [];
  for (const a of receiver.arrivals) {
    if (a.answered !== 200 || seen.has(a.id)) continue;
    const body = JSON.parse(a.body) as { type: string; data: { outageId?: string } };
    if (!body.type.startsWith("provider.outage_")) continue;
    seen.add(a.id);
    out.push({ type: body.type, outageId: body.data.outageId ?? "(none)", id: a.id });
  }
  return out;
}

const submit = (taskId: string, turns: number, agentCommand?: string) =>
  submitRun(h.db.db, "inst-a", { companyId: "co-1", taskId, agent: "a", provider: "codex", turns, ...(agentCommand ? { agentCommand } : {}) }, { id: "test", role: "operator" });

describe("breaker changes are recorded in the order they happened", () => {
  it("an open whose record is slow and the close right after it: the row ends closed, the outage ended", async () => {
    // The first transaction (the open's record) is held 300 ms: a close recorded beside it, not after it, would land first.
    let holdNext = false;
    const wrapDb = (db: Db): Db =>
      new Proxy(db, {
        get(target, prop, receiver) {
          const value: unknown = Reflect.get(target, prop, receiver);
          if (prop !== "$transaction" || typeof value !== "function") return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
          return async (...args: unknown[]) => {
            if (holdNext) {
              holdNext = false;
              await new Promise((r) => setTimeout(r, 300));
            }
            return (value as (...a: unknown[]) => unknown).apply(target, args);
          };
        },
      });
    const c = await h.controller({ wrapDb, outageAlertMinMs: 0, breakerProbeMs: 50, breakerProbeCapMs: 100 });
    holdNext = true;
    // The API refused one call: the breaker opens and probes at once; the emulator answers, so it closes.
    c.ctx.breaker!.failed(new ProviderError("unreachable", "GET /sandbox/x", "cannot reach the provider (ECONNRESET)"));
    await waitFor("the breaker closed again", async () => (c.ctx.breaker!.open ? null : true), 5_000);
    await c.stop("test");
    // Longer than the hold: a record still in flight would have landed by now.
    await new Promise((r) => setTimeout(r, 600));
    const row = await h.db.db.controllerProcess.findUniqueOrThrow({ where: { bootId: c.ctx.identity.bootId } });
    expect(row.providerUnavailableSince).toBeNull();
    expect(await h.db.db.providerOutage.count({ where: { openedBy: c.ctx.identity.bootId, endedAt: null } })).toBe(0);
    expect(await h.db.db.providerOutage.count({ where: { openedBy: c.ctx.identity.bootId } })).toBe(1);
  });
});

describe("outage alerts: the breaker is the provider's, an outage a state with one owner", () => {
  it("(a) one sandbox's toolbox answering 502 pages nothing: its run's attempts are counted, other runs are claimed on time", { timeout: 120_000 }, async () => {
    const since = new Date();
    const sick = await submit("toolbox-502", 2);
    const healthy = [await submit("healthy-1", 2), await submit("healthy-2", 2)];
    // Daytona's proxy answers 502 while one sandbox's daemon is not ready: its toolbox only, the API answers.
    await h.emu.admin.setFault({ match: { runId: sick.id, scope: "toolbox" }, fault: { kind: "http_error", status: 502 } });
    const c = controller({ RUNWARDEN_OUTAGE_ALERT_MIN_MS: "0" });
    await c.ready;
    const readyAt = Date.now();

    const claimedWithin = await waitFor(
      "the healthy runs claimed",
      async () => {
        const rows = await h.db.db.runEvent.findMany({ where: { runId: { in: healthy.map((r) => r.id) }, type: "claimed" } });
        return new Set(rows.map((r) => r.runId)).size === healthy.length ? Math.max(...rows.map((r) => r.at.getTime())) - readyAt : null;
      },
      30_000,
    );
    expect(claimedWithin).toBeLessThan(5_000);
    const failed = await waitFor(
      "the sick run to spend its attempts",
      async () => {
        const r = await h.db.db.run.findUniqueOrThrow({ where: { id: sick.id } });
        return r.status === "failed" ? r : null;
      },
      60_000,
    );
    expect({ code: failed.failureCode, attempts: failed.recoveryAttempts }).toEqual({ code: "native_recovery_attempts_exhausted", attempts: 3 });
    const proofs = await h.db.db.proof.findMany({ where: { runId: sick.id, kind: "recovery_attempt" }, orderBy: { evaluatedAt: "asc" } });
    expect(proofs.map((p) => [p.verdict, (p.output as { counted: boolean }).counted])).toEqual([
      ["try_again", true],
      ["try_again", true],
      ["give_up", true],
    ]);
    expect(proofs.every((p) => (p.evidence as { failure?: { scope?: string; status?: number } }).failure?.scope === "toolbox")).toBe(true);
    await waitFor(
      "the healthy runs to succeed",
      async () => (await h.db.db.run.count({ where: { id: { in: healthy.map((r) => r.id) }, status: "succeeded" } })) === healthy.length,
      60_000,
    );
    // The run.failed alert arrives (the sender works); no outage alert ever did, no outage was ever opened.
    await waitFor("run.failed delivered", async () => receiver.arrivals.some((a) => a.answered === 200 && a.body.includes(`"run.failed"`) && a.body.includes(sick.id)), 20_000);
    expect(outageAlerts()).toEqual([]);
    expect(await h.db.db.alertEvent.count({ where: { type: { startsWith: "provider.outage_" }, createdAt: { gte: since } } })).toBe(0);
    expect(await h.db.db.providerOutage.count({ where: { createdAt: { gte: since } } })).toBe(0);
    expect(c.output.filter((l) => l.includes("provider unavailable: runs wait for it"))).toEqual([]);
  });

  it("(a) a 429 that one sandbox's toolbox answers for ever waits a bounded number of times, then counts: the run ends, nothing is paged", { timeout: 120_000 }, async () => {
    const before = outageAlerts().length;
    const since = new Date();
    const run = await submit("toolbox-429", 2);
    await h.emu.admin.setFault({ match: { runId: run.id, scope: "toolbox" }, fault: { kind: "rate_limit", retryAfterSeconds: 0 } });
    const c = controller({ RUNWARDEN_OUTAGE_ALERT_MIN_MS: "0", RUNWARDEN_RATE_LIMIT_MAX_WAITS: "2" });
    await c.ready;
    const failed = await waitFor(
      "the rate-limited run to end",
      async () => {
        const r = await h.db.db.run.findUniqueOrThrow({ where: { id: run.id } });
        return r.status === "failed" ? r : null;
      },
      60_000,
    );
    expect(failed.failureCode).toBe("native_recovery_attempts_exhausted");
    const proofs = await h.db.db.proof.findMany({ where: { runId: run.id, kind: "recovery_attempt" }, orderBy: { evaluatedAt: "asc" } });
    expect(proofs.map((p) => p.verdict)).toEqual(["wait", "wait", "try_again", "try_again", "give_up"]);
    const bound = (proofs[2]!.checks as Array<{ name: string; ok: boolean; actual?: string }>).find((k) => k.name === "rate_limit_waits_within_bound");
    expect(bound).toMatchObject({ ok: false, actual: expect.stringMatching(/^2 waits/) });
    await new Promise((r) => setTimeout(r, 1_500));
    expect(outageAlerts().slice(before)).toEqual([]);
    expect(await h.db.db.providerOutage.count({ where: { createdAt: { gte: since } } })).toBe(0);
  });

  it("(b) the controller that opened the breaker is SIGKILLed mid-outage, its successor sees the provider up: one started, one ended, one key", { timeout: 120_000 }, async () => {
    const before = outageAlerts().length;
    const since = new Date();
    const first = controller({ RUNWARDEN_OUTAGE_ALERT_MIN_MS: "1000" });
    await first.ready;
    const run = await submit("outage-kill", 40, "sleep 0.2");
    await waitFor("the run past its first turn", async () => ((await h.db.db.run.findUniqueOrThrow({ where: { id: run.id } })).turnsDone >= 1 ? true : null), 30_000);
    // The whole provider answers 502: API and toolboxes.
    await h.emu.admin.setFault({ fault: { kind: "http_error", status: 502 } });
    const started = await waitFor("provider.outage_started written", async () => h.db.db.alertEvent.findFirst({ where: { type: "provider.outage_started", createdAt: { gte: since } } }), 30_000);
    first.kill("SIGKILL");
    await first.exited;
    await h.emu.admin.clearFaults();

    const second = controller({ RUNWARDEN_OUTAGE_ALERT_MIN_MS: "1000" });
    await second.ready;
    await waitFor("both alerts received", async () => (outageAlerts().length - before >= 2 ? true : null), 30_000);
    // Nothing more comes: no second start, no second end.
    await new Promise((r) => setTimeout(r, 3_000));
    const alerts = outageAlerts().slice(before);
    expect(alerts.map((a) => a.type)).toEqual(["provider.outage_started", "provider.outage_ended"]);
    const outages = await h.db.db.providerOutage.findMany({ where: { instanceId: "inst-a", createdAt: { gte: since } } });
    expect(outages).toHaveLength(1);
    const outage = outages[0]!;
    expect(alerts.map((a) => a.outageId)).toEqual([outage.id, outage.id]);
    expect(started.dedupeKey).toBe(`provider.outage_started:${outage.id}`);
    const events = await h.db.db.alertEvent.findMany({ where: { type: { startsWith: "provider.outage_" }, createdAt: { gte: since } }, orderBy: { createdAt: "asc" } });
    expect(events.map((e) => e.dedupeKey)).toEqual([`provider.outage_started:${outage.id}`, `provider.outage_ended:${outage.id}`]);
    // Ended by the successor, the killed controller named as the one whose outage it was.
    const secondBoot = /bootId=(\S+)/.exec(second.output.find((l) => l.startsWith("controller ready:")) ?? "")?.[1];
    expect(outage.endedBy).toBe(secondBoot);
    const end = (outage.decisions as Array<{ verdict: { verdict: string; orphanedBy: string[] } }>).at(-1)!.verdict;
    expect(end).toMatchObject({ verdict: "end", orphanedBy: [outage.openedBy] });
  });
});
