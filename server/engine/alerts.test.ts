import { describe, expect, it } from "vitest";
import { ALERT_EVENT_TYPES, alertPayload, alertText, crossedCostThreshold, deliveryBackoffMs, endpointWants, judgeDelivery, OPT_IN_ALERT_EVENT_TYPES, type AlertEvent, type DeliveryPolicy } from "./alerts";

const POLICY: DeliveryPolicy = { baseMs: 1_000, capMs: 60_000, maxAttempts: 5 };
const NOW = "2026-12-06T09:00:00.000Z";

const runFailed: AlertEvent = {
  type: "run.failed",
  data: {
    runId: "0b6f7b8e-1d1c-4c49-9a51-0e6f8f1d9c11",
    companyId: "co-1",
    taskId: "nightly-report",
    agent: "planner",
    code: "native_provider_startup_rejected",
    owner: "board",
    canRetry: true,
    nextAction: "Fix the sandbox's permissions, then Retry.",
    detail: "bwrap: loopback: Failed RTM_NEWADDR",
    url: "https://runwarden.example.com/runs/0b6f7b8e-1d1c-4c49-9a51-0e6f8f1d9c11",
  },
};

const runEnded = {
  runId: runFailed.data.runId,
  companyId: "co-1",
  taskId: "nightly-report",
  agent: "planner",
  externalId: null,
  failureCode: null,
  createdAt: NOW,
  startedAt: NOW,
  finishedAt: NOW,
  url: runFailed.data.url,
};

describe("alert payload text (what Slack shows as is)", () => {
  it("a failed run names its code, owner, Retry and links its page", () => {
    expect(alertText(runFailed)).toBe(
      "Runwarden: run failed with native_provider_startup_rejected (owner: board; Retry offered). co-1 / nightly-report (agent planner). Fix the sandbox's permissions, then Retry. https://runwarden.example.com/runs/0b6f7b8e-1d1c-4c49-9a51-0e6f8f1d9c11",
    );
    expect(alertText({ ...runFailed, data: { ...runFailed.data, canRetry: false, nextAction: null } })).toContain("no Retry). co-1 / nightly-report (agent planner). bwrap: loopback");
  });

  it("every event type has plain text: one line, no Slack markup", () => {
    const events: AlertEvent[] = [
      runFailed,
      { type: "run.recovery_exhausted", data: { ...runFailed.data, code: "native_recovery_attempts_exhausted", attempts: 5 } },
      { type: "run.succeeded", data: { ...runEnded, status: "succeeded" } },
      { type: "run.cancelled", data: { ...runEnded, externalId: "plat-42", status: "cancelled" } },
      { type: "provider.outage_started", data: { outageId: "o-1", provider: "daytona", since: NOW, lastError: "ECONNREFUSED", controller: "b1", url: "http://localhost:3000/" } },
      { type: "provider.outage_ended", data: { outageId: "o-1", provider: "daytona", since: NOW, endedAt: NOW, downSeconds: 61, controller: "b1", url: "http://localhost:3000/" } },
      { type: "orphans.cost_over", data: { ratePerHour: 12.5, thresholdPerHour: 10, previousRatePerHour: 4, orphans: 7, url: "http://localhost:3000/orphans" } },
      { type: "wave.failed", data: { waveId: "w1", companyId: "co-1", seed: 7, tasks: 10, failedTasks: 2, url: "http://localhost:3000/waves/w1" } },
      {
        type: "forecast.missed",
        data: { forecastId: "f1", runId: "r1", companyId: "co-1", taskId: "t1", forecast: "continues (reattach)", actual: "ends (native_remote_recovery_lease_mismatch)", differences: "prediction: forecast continues, actual ends", url: "http://localhost:3000/forecast?forecast=f1" },
      },
      { type: "test", data: { endpoint: "ops", requestedBy: "admin@example.com" } },
    ];
    expect(events.map((e) => e.type).sort()).toEqual([...ALERT_EVENT_TYPES].sort());
    for (const e of events) {
      const text = alertText(e);
      expect(text).toMatch(/^Runwarden: /);
      expect(text).not.toMatch(/\n|[<>*`]/);
    }
    expect(alertText(events[1]!)).toContain("after 5 attempts");
    expect(alertText(events[2]!)).toBe("Runwarden: run succeeded. co-1 / nightly-report (agent planner). https://runwarden.example.com/runs/0b6f7b8e-1d1c-4c49-9a51-0e6f8f1d9c11");
    expect(alertText(events[3]!)).toContain("run cancelled. co-1 / nightly-report (agent planner; external id plat-42)");
    expect(alertText(events[5]!)).toContain("back after 61 s");
    expect(alertText(events[6]!)).toContain("$12.50/h, over the $10.00/h threshold (7 orphans)");
  });

  it("the payload carries type, id, occurredAt, data and text", () => {
    const p = alertPayload(runFailed, "ev-1", NOW);
    expect(Object.keys(p).sort()).toEqual(["data", "id", "occurredAt", "text", "type"]);
    expect(p).toMatchObject({ type: "run.failed", id: "ev-1", occurredAt: NOW, data: runFailed.data, text: alertText(runFailed) });
  });
});

describe("subscriptions", () => {
  it("an endpoint on the default set gets every type but the opt-in ones; one naming a type gets only what it names", () => {
    expect([...OPT_IN_ALERT_EVENT_TYPES].sort()).toEqual(["run.cancelled", "run.succeeded"]);
    for (const t of ALERT_EVENT_TYPES) expect(endpointWants([], t), t).toBe(t !== "run.succeeded" && t !== "run.cancelled");
    expect(endpointWants(["run.succeeded"], "run.succeeded")).toBe(true);
    expect(endpointWants(["run.succeeded"], "run.cancelled")).toBe(false);
    expect(endpointWants(["run.succeeded"], "run.failed")).toBe(false);
    expect(endpointWants(["run.failed", "run.cancelled"], "run.cancelled")).toBe(true);
  });
});

describe("delivery judgement", () => {
  it("2xx is delivered, at any attempt", () => {
    for (const status of [200, 201, 204, 299]) expect(judgeDelivery({ attempts: 5, answer: { status }, now: NOW, policy: POLICY, jitter: 0.5 }).verdict).toBe("delivered");
  });

  it("anything else is retried after a capped, jittered doubling back-off", () => {
    const v = judgeDelivery({ attempts: 1, answer: { status: 503 }, now: NOW, policy: POLICY, jitter: 0 });
    expect(v).toEqual({ verdict: "retry", reason: "HTTP 503", delayMs: 500, nextAttemptAt: "2026-12-06T09:00:00.500Z" });
    expect(judgeDelivery({ attempts: 2, answer: { error: "ECONNREFUSED" }, now: NOW, policy: POLICY, jitter: 0.999999 })).toMatchObject({ verdict: "retry", reason: "ECONNREFUSED", delayMs: 2_000 });
    // Full delay d = min(cap, base·2^(n−1)); the wait is in [d/2, d].
    expect([1, 2, 3, 4].map((n) => deliveryBackoffMs(n, POLICY, 1))).toEqual([1_000, 2_000, 4_000, 8_000]);
    expect(deliveryBackoffMs(40, POLICY, 1)).toBe(60_000);
    expect(deliveryBackoffMs(40, POLICY, 0)).toBe(30_000);
    for (let j = 0; j < 1; j += 0.1) {
      const d = deliveryBackoffMs(3, POLICY, j);
      expect(d).toBeGreaterThanOrEqual(2_000);
      expect(d).toBeLessThanOrEqual(4_000);
    }
  });

  it("gives up at the last attempt, saying what it last saw", () => {
    expect(judgeDelivery({ attempts: 5, answer: { status: 500 }, now: NOW, policy: POLICY, jitter: 0 })).toEqual({ verdict: "give_up", reason: "HTTP 500; gave up after 5 attempts" });
    expect(judgeDelivery({ attempts: 4, answer: { status: 500 }, now: NOW, policy: POLICY, jitter: 0 }).verdict).toBe("retry");
  });
});

describe("cost alerts", () => {
  it("orphans.cost_over fires once per crossing, never while it stays over, and is off without a threshold", () => {
    const passes = [0, 4, 11, 12, 30, 9, 10, 10, 2, 15];
    const fired = passes.map((rate, i) => crossedCostThreshold(i === 0 ? 0 : passes[i - 1]!, rate, 10));
    expect(fired).toEqual([false, false, true, false, false, false, true, false, false, true]);
    expect(crossedCostThreshold(0, 1_000, null)).toBe(false);
  });
});
