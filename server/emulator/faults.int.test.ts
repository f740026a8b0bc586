import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import type { DaytonaProvider } from "../providers/daytona";
import { isBindConflict, type RunnerClient } from "../providers/runner";
import { buildLabels, creationName, ProviderError } from "../providers/types";
import { startTestEmulator, type TestEmulator } from "../test/emulator";

/** Each fault, as the controller sees it through the provider and the runner client. */

let t: TestEmulator;
let provider: DaytonaProvider;
let runner: RunnerClient;

beforeAll(async () => {
  t = await startTestEmulator(inject("adminUrl"), inject("runPrefix"));
  provider = t.provider({ instanceId: "inst-a" });
  runner = t.runner(provider);
});

afterEach(async () => {
  await t.admin.clearFaults();
});

afterAll(async () => {
  await t?.close();
});

const labelsFor = (op: string, runId?: string) => buildLabels({ instanceId: "inst-a", companyId: "co-1", operationId: op, runId });

async function timed<T>(fn: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await fn();
  return { value, ms: performance.now() - started };
}

async function sandboxWithRunner(op: string, runId: string) {
  const sbx = await provider.create({ name: creationName("rw", op), labels: labelsFor(op, runId) });
  await runner.start(sbx.id, { runId, runnerInstanceId: `ri-${op}`, sessionId: `s-${op}` });
  return sbx;
}

describe("fault: latency", () => {
  it("delays every matching call by the configured time, and only matching ones", async () => {
    const slow = await provider.create({ name: "rw-create-op-slow", labels: labelsFor("op-slow") });
    await provider.create({ name: "rw-create-op-fast", labels: labelsFor("op-fast") });
    await t.admin.setFault({ match: { name: "rw-create-op-slow" }, fault: { kind: "latency", ms: 400 } });

    const a = await timed(() => provider.getByName("rw-create-op-slow"));
    expect(a.value?.id).toBe(slow.id);
    expect(a.ms).toBeGreaterThanOrEqual(390);
    const b = await timed(() => provider.getByName("rw-create-op-slow"));
    expect(b.ms).toBeGreaterThanOrEqual(390);
    const readFile = await timed(() => provider.readFile(slow.id, "/none"));
    expect(readFile.ms).toBeGreaterThanOrEqual(390);
    const fast = await timed(() => provider.getByName("rw-create-op-fast"));
    expect(fast.ms).toBeLessThan(300);
  });

  it("applies `times` calls only, and by label to creates too", async () => {
    await t.admin.setFault({ match: { labels: { "runwarden.operation": "op-lat-once" } }, fault: { kind: "latency", ms: 300 }, times: 1 });
    const first = await timed(() => provider.create({ name: "rw-create-op-lat-once", labels: labelsFor("op-lat-once") }));
    expect(first.ms).toBeGreaterThanOrEqual(290);
    const second = await timed(() => provider.getByName("rw-create-op-lat-once"));
    expect(second.ms).toBeLessThan(250);
    const [rule] = await t.admin.faults();
    expect(rule).toMatchObject({ times: 1, used: 1 });
  });

  it("turns into a provider timeout when the latency exceeds the caller's bound", async () => {
    await provider.create({ name: "rw-create-op-lat-timeout", labels: labelsFor("op-lat-timeout") });
    await t.admin.setFault({ match: { name: "rw-create-op-lat-timeout" }, fault: { kind: "latency", ms: 1500 } });
    const impatient = t.provider({ instanceId: "inst-a", timeoutMs: 300 });
    await expect(impatient.getByName("rw-create-op-lat-timeout")).rejects.toMatchObject({ kind: "timeout" });
  });
});

describe("fault: late materialisation", () => {
  it("materialises an aborted create after the delay: 404 at first, then the sandbox", async () => {
    const name = creationName("rw", "op-late");
    await t.admin.setFault({ match: { name }, fault: { kind: "late", delayMs: 1500 }, times: 1 });
    const sent = Date.now();
    const controller = new AbortController();
    const pending = provider.create({ name, labels: labelsFor("op-late"), signal: controller.signal }).catch((e: unknown) => e);
    // The caller gives up once the emulator holds the create (not after a guessed 200 ms, which a loaded machine may not reach).
    await expect.poll(async () => (await t.admin.sandboxes()).some((s) => s.name === name), { timeout: 5_000, interval: 20 }).toBe(true);
    controller.abort();
    const err = await pending;
    expect(err).toBeInstanceOf(ProviderError);
    expect((err as ProviderError).kind).toBe("aborted");

    // The caller is gone; the provider says "not found" for now…
    expect(await provider.getByName(name)).toBeNull();
    const held = (await t.admin.sandboxes()).find((s) => s.name === name);
    expect(held?.materialised).toBe(false);

    // …and the sandbox appears once the delay has passed.
    const found = await pollFor(() => provider.getByName(name), 5000);
    expect(Date.now() - sent).toBeGreaterThanOrEqual(1400);
    expect(found?.labels).toEqual(labelsFor("op-late"));
    expect(await provider.listByLabels({ "runwarden.instance": "inst-a", "runwarden.operation": "op-late" })).toHaveLength(1);
  });

  it("answers a patient caller only once the sandbox exists", async () => {
    const name = creationName("rw", "op-late-patient");
    await t.admin.setFault({ match: { name }, fault: { kind: "late", delayMs: 700 } });
    const { value, ms } = await timed(() => provider.create({ name, labels: labelsFor("op-late-patient") }));
    expect(ms).toBeGreaterThanOrEqual(650);
    expect((await provider.getByName(name))?.id).toBe(value.id);
  });
});

describe("fault: never_connect", () => {
  it("keeps the runner connecting; session-open times out after the caller's bound", async () => {
    const sbx = await sandboxWithRunner("op-never", "run-never");
    await t.admin.setFault({ match: { runId: "run-never" }, fault: "never_connect" });
    const { value, ms } = await timed(() => runner.sessionOpen(sbx.id, { timeoutMs: 500 }));
    expect(value).toMatchObject({ ok: false, definite: false, reason: "timeout" });
    expect(ms).toBeGreaterThanOrEqual(490);
    expect(ms).toBeLessThan(5000);
    const state = await runner.readState(sbx.id);
    expect(state).toMatchObject({ lifecycle: "connecting", lastConnectionProtocolVersion: null, providerStatePresent: false });

    // Once the fault is lifted the same runner connects.
    await t.admin.clearFaults();
    const opened = await runner.sessionOpen(sbx.id, { timeoutMs: 5000 });
    expect(opened.ok).toBe(true);
  });
});

describe("fault: reject", () => {
  it("fails session.open definitely with requires_action / permission and the provider's message", async () => {
    const sbx = await sandboxWithRunner("op-reject", "run-reject");
    await t.admin.setFault({ match: { runId: "run-reject" }, fault: "reject" });
    const result = await runner.sessionOpen(sbx.id, { timeoutMs: 5000 });
    expect(result).toEqual({
      ok: false,
      definite: true,
      providerFailure: { kind: "requires_action", category: "permission", message: "bwrap: loopback: Failed RTM_NEWADDR" },
      message: "bwrap: loopback: Failed RTM_NEWADDR",
    });
    expect(await runner.readState(sbx.id)).toMatchObject({ lifecycle: "unrecoverable", lastConnectionProtocolVersion: null });
  });

  it.each([
    { kind: "requires_action", category: "authentication", message: "invalid API key" },
    { kind: "requires_action", category: "invalid_request", message: "unknown model" },
    { kind: "transient", category: null, message: "upstream 503" },
    { kind: "rate_limit", category: null, message: "429 Too Many Requests" },
    { kind: "quota", category: null, message: "monthly quota exhausted" },
  ] as const)("carries a $kind/$category failure as given", async (failure) => {
    const op = `op-reject-${failure.kind}-${failure.category ?? "none"}`.replaceAll("_", "-");
    const sbx = await sandboxWithRunner(op, `run-${op}`);
    await t.admin.setFault({ match: { name: creationName("rw", op) }, fault: { kind: "reject", providerFailure: failure } });
    const result = await runner.sessionOpen(sbx.id, { timeoutMs: 5000 });
    expect(result).toMatchObject({ ok: false, definite: true, providerFailure: failure });
    const expected = failure.kind === "requires_action" ? "unrecoverable" : "recoverable_failure";
    expect((await runner.readState(sbx.id))?.lifecycle).toBe(expected);
  });
});

describe("fault: bind_conflict", () => {
  it("fails runner start with runner_ingress_bind_conflict, then (times: 1) starts", async () => {
    const sbx = await provider.create({ name: "rw-create-op-bind", labels: labelsFor("op-bind", "run-bind") });
    await t.admin.setFault({ match: { runId: "run-bind" }, fault: "bind_conflict", times: 1 });
    const err = await runner.start(sbx.id, { runId: "run-bind", runnerInstanceId: "ri-1", sessionId: "s-1" }).catch((e: unknown) => e);
    expect(isBindConflict(err)).toBe(true);
    expect(err).toMatchObject({ kind: "http", status: 409, code: "runner_ingress_bind_conflict" });
    expect((err as Error).message).toMatch(/listen tcp 127\.0\.0\.1:\d+: bind: address already in use/);
    expect(await runner.readState(sbx.id)).toBeNull();
    expect((await runner.process(sbx.id)).state).toBe("absent");

    const state = await runner.start(sbx.id, { runId: "run-bind", runnerInstanceId: "ri-1", sessionId: "s-1" });
    expect(state.lifecycle).toBe("connecting");
  });

  it("matches a fault by the run id in the start request even without a run label", async () => {
    const sbx = await provider.create({ name: "rw-create-op-bind2", labels: labelsFor("op-bind2") });
    await t.admin.setFault({ match: { runId: "run-bind2" }, fault: "bind_conflict" });
    await expect(runner.start(sbx.id, { runId: "run-bind2", runnerInstanceId: "ri-1", sessionId: "s-1" })).rejects.toMatchObject({
      code: "runner_ingress_bind_conflict",
    });
    await expect(runner.start(sbx.id, { runId: "run-other", runnerInstanceId: "ri-1", sessionId: "s-1" })).resolves.toMatchObject({
      runId: "run-other",
    });
  });
});

describe("fault admin", () => {
  it("lists, deletes one, clears all, and refuses a malformed rule", async () => {
    const a = await t.admin.setFault({ match: { name: "x" }, fault: "never_connect" });
    await t.admin.setFault({ match: {}, fault: { kind: "latency", ms: 1 }, times: 3 });
    expect((await t.admin.faults()).map((f) => f.fault.kind)).toEqual(["never_connect", "latency"]);
    expect(await t.admin.clearFaults(a.id)).toBe(1);
    expect(await t.admin.faults()).toHaveLength(1);
    expect(await t.admin.clearFaults()).toBe(1);
    await expect(t.admin.setFault({ match: {}, fault: { kind: "explode" } } as never)).rejects.toMatchObject({ status: 400 });
    await expect(t.admin.setFault({ match: { nam: "typo" }, fault: "late" } as never)).rejects.toMatchObject({ status: 400 });
  });
});

describe("the provider unavailable, as Daytona is met", () => {
  it("rate_limit: a 429 with Retry-After and the throttler's X-RateLimit-* headers; the provider error carries the wait", async () => {
    await t.admin.setFault({ match: { name: "rl-1" }, fault: { kind: "rate_limit", retryAfterSeconds: 7, throttler: "sandbox-create" }, times: 1 });
    const res = await fetch(`${t.emulator.url}/sandbox`, {
      method: "POST",
      headers: { authorization: "Bearer emulator-key", "content-type": "application/json" },
      body: JSON.stringify({ name: "rl-1", labels: labelsFor("rl-1") }),
    });
    expect(res.status).toBe(429);
    expect(Object.fromEntries([...res.headers].filter(([k]) => k === "retry-after" || k.startsWith("x-ratelimit")))).toEqual({
      "retry-after": "7",
      "x-ratelimit-limit-sandbox-create": "10",
      "x-ratelimit-remaining-sandbox-create": "0",
      "x-ratelimit-reset-sandbox-create": "7",
    });
    await t.admin.setFault({ match: { name: creationName("rw", "rl-2") }, fault: { kind: "rate_limit", retryAfterSeconds: 3 }, times: 1 });
    const err = await provider.create({ name: creationName("rw", "rl-2"), labels: labelsFor("rl-2") }).catch((e: unknown) => e);
    expect(err).toMatchObject({ kind: "http", status: 429, retryAfterMs: 3_000 });
    // Used up: the next one goes through.
    expect((await provider.create({ name: creationName("rw", "rl-2"), labels: labelsFor("rl-2") })).name).toBe(creationName("rw", "rl-2"));
  });

  it("http_error: a 502 is the proxy's HTML page (a garbage answer with its status), a 503 Nest's JSON; on the toolbox too", async () => {
    const sbx = await provider.create({ name: creationName("rw", "he-1"), labels: labelsFor("he-1") });
    await t.admin.setFault({ match: { name: sbx.name }, fault: { kind: "http_error", status: 502 }, times: 1 });
    expect(await provider.getById(sbx.id).catch((e: unknown) => e)).toMatchObject({ status: 502 });
    await t.admin.setFault({ match: { name: sbx.name }, fault: { kind: "http_error", status: 503 }, times: 1 });
    expect(await provider.getById(sbx.id).catch((e: unknown) => e)).toMatchObject({ kind: "http", status: 503 });
    await t.admin.setFault({ match: { name: sbx.name }, fault: { kind: "http_error", status: 502 }, times: 1 });
    const read = await provider.readFile(sbx.id, "/etc/hostname").catch((e: unknown) => e);
    expect(ProviderError.is(read) && read.status).toBe(502);
  });

  it("hang: no answer; the caller's timeout is what ends it", async () => {
    const sbx = await provider.create({ name: creationName("rw", "hang-1"), labels: labelsFor("hang-1") });
    await t.admin.setFault({ match: { name: sbx.name }, fault: "hang", times: 1 });
    const impatient = t.provider({ instanceId: "inst-a", timeoutMs: 400 });
    const { value, ms } = await timed(() => impatient.getById(sbx.id).catch((e: unknown) => e));
    expect(value).toMatchObject({ kind: "timeout" });
    expect(ms).toBeGreaterThanOrEqual(350);
  });
});

async function pollFor<T>(fn: () => Promise<T | null>, timeoutMs: number): Promise<T | null> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== null || Date.now() > deadline) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
}
