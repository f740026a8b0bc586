import { TRPCError } from "@trpc/server";
import crypto from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ControllerContext } from "../../controller/context";
import { json } from "../../controller/records";
import { startControllerHarness, waitFor, type ControllerHarness } from "../../test/controller";
import { metricsResponse, renderMetrics } from "../../metrics";
import { currentProcessIdentity } from "../../process/identity";
import { buildLabels, creationName } from "../../providers/labels";
import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import type { ZodError } from "zod";
import { appRouter, createCaller } from "../root";
import { createTRPCContext } from "../trpc";
import { TEST_ADMIN, testUser } from "../../test/users";
import { servicesOf } from "../../services";

let h: ControllerHarness;
let service: ControllerContext;

beforeAll(async () => {
  h = await startControllerHarness();
  service = h.service();
});
afterAll(() => h.close());

const caller = () => createCaller(() => createTRPCContext({ user: TEST_ADMIN, headers: new Headers(), db: h.db.db, services: servicesOf(service) }));

async function trpcError(p: Promise<unknown>): Promise<TRPCError> {
  const err = await p.then(() => null, (e: unknown) => e);
  expect(err).toBeInstanceOf(TRPCError);
  return err as TRPCError;
}

describe("runs.create", () => {
  it("queues a run and writes an audit entry", async () => {
    const run = await caller().runs.create({ companyId: "co-1", taskId: "trpc-1", agent: "a", provider: "codex", target: "remote", sandboxMode: "warm", turns: 2 });
    expect(run).toMatchObject({ taskId: "trpc-1", status: "queued", previousRunId: null });
    const audit = await h.db.db.auditEntry.findFirstOrThrow({ where: { action: "run.submit", targetId: run.id } });
    expect(audit).toMatchObject({ actor: "admin@test.local", role: "admin", outcome: "ok" });
  });

  it("answers BAD_REQUEST naming the field", async () => {
    const err = await trpcError(caller().runs.create({ companyId: "co-1", taskId: "t", agent: "a", provider: "codex", turns: 0 } as never));
    expect(err.code).toBe("BAD_REQUEST");
    expect((err.cause as ZodError).issues[0]?.path).toEqual(["turns"]);

    // Over HTTP the formatter puts the field in the message itself.
    const res = await fetchRequestHandler({
      endpoint: "/api/trpc",
      req: new Request("http://x/api/trpc/runs.create", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ json: { companyId: "co 1", taskId: "t", agent: "a", provider: "codex" } }),
      }),
      router: appRouter,
      createContext: () => createTRPCContext({ user: TEST_ADMIN, headers: new Headers(), db: h.db.db, services: servicesOf(service) }),
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { json: { message: string; data: { field: string; appCode: string } } } };
    expect(body.error.json.message).toMatch(/^companyId: /);
    expect(body.error.json.data).toMatchObject({ field: "companyId", appCode: "INVALID_INPUT" });
  });

  it("answers CONFLICT while the task has an active run", async () => {
    await caller().runs.create({ companyId: "co-1", taskId: "trpc-dup", agent: "a", provider: "codex" });
    const err = await trpcError(caller().runs.create({ companyId: "co-1", taskId: "trpc-dup", agent: "a", provider: "codex" }));
    expect(err.code).toBe("CONFLICT");
    expect(err.message).toMatch(/already has an active run/);
  });
});

describe("runs.retry", () => {
  it("refuses with PRECONDITION_FAILED and the plain reason while a run is active", async () => {
    const run = await caller().runs.create({ companyId: "co-1", taskId: "trpc-retry-active", agent: "a", provider: "codex" });
    const err = await trpcError(caller().runs.retry({ runId: run.id }));
    expect(err.code).toBe("PRECONDITION_FAILED");
    expect(err.message).toMatch(/only for a run that ended in a failure/);
  });

  it("answers NOT_FOUND for an unknown run and BAD_REQUEST for a malformed id", async () => {
    expect((await trpcError(caller().runs.retry({ runId: crypto.randomUUID() }))).code).toBe("NOT_FOUND");
    const bad = await trpcError(caller().runs.retry({ runId: "nope" }));
    expect(bad.code).toBe("BAD_REQUEST");
  });

  it("creates one successor and makes one cleanup attempt for the old run's sandbox", async () => {
    const c = await h.controller();
    const run = await caller().runs.create({ companyId: "co-1", taskId: "trpc-retry", agent: "a", provider: "codex", turns: 1 });
    await h.emu.admin.setFault({ match: { runId: run.id }, fault: { kind: "reject" } });
    c.start();
    await waitFor("the rejection", async () => (await h.db.db.run.findUniqueOrThrow({ where: { id: run.id } })).status === "failed");
    await c.stop("test");
    const first = await caller().runs.retry({ runId: run.id });
    const second = await caller().runs.retry({ runId: run.id });
    expect(first.created).toBe(true);
    expect(second).toMatchObject({ created: false, run: { id: first.run.id } });
    expect(first.run.previousRunId).toBe(run.id);
  });
});

describe("runs.cancel", () => {
  const boardOf = (companies: string[]) =>
    createCaller(() => createTRPCContext({ user: testUser("board", companies), headers: new Headers(), db: h.db.db, services: servicesOf(service) }));

  it("a board user cancels a run of their company with a reason; a second cancel is refused, not an error; Retry is offered", async () => {
    const run = await caller().runs.create({ companyId: "co-1", taskId: "trpc-cancel", agent: "a", provider: "codex" });
    expect(await boardOf(["co-1"]).runs.cancel({ runId: run.id, reason: "  duplicate  " })).toEqual({ result: "cancelled", runId: run.id, leases: [] });
    expect(await boardOf(["co-1"]).runs.cancel({ runId: run.id })).toEqual({
      result: "refused",
      runId: run.id,
      reason: "already_cancelled",
      refusal: "This run was already cancelled by board@test.local: duplicate.",
    });
    const detail = await caller().runs.get({ id: run.id });
    expect(detail.run).toMatchObject({ status: "cancelled", cancelledBy: "board@test.local", cancelReason: "duplicate" });
    expect(detail.retry.blocker).toBeNull();
    expect((await h.db.db.auditEntry.findMany({ where: { action: "run.cancel", targetId: run.id } })).map((a) => a.outcome).sort()).toEqual(["ok", "refused"]);
  });

  it("another company's run is NOT_FOUND; a reason past its bound is BAD_REQUEST", async () => {
    const run = await caller().runs.create({ companyId: "co-1", taskId: "trpc-cancel-scope", agent: "a", provider: "codex" });
    expect((await trpcError(boardOf(["co-2"]).runs.cancel({ runId: run.id }))).code).toBe("NOT_FOUND");
    expect((await trpcError(boardOf(["co-1"]).runs.cancel({ runId: run.id, reason: "x".repeat(501) }))).code).toBe("BAD_REQUEST");
    expect((await caller().runs.get({ id: run.id })).run.status).toBe("queued");
  });
});

describe("sweeps.run", () => {
  it("runs the sweeps now and reports each decision", async () => {
    const id = crypto.randomUUID();
    const name = creationName("rw", id);
    await h.emu.admin.plant({ name, labels: buildLabels({ instanceId: "inst-a", companyId: "co-1", operationId: id }) });
    await h.db.db.sandboxCreationIntent.create({
      data: {
        id,
        instanceId: "inst-a",
        companyId: "co-1",
        runId: "probe",
        creationName: name,
        labels: json({}),
        creator: json({ bootId: "b-old", pid: 999_999, startedAt: new Date(Date.now() - 3600_000).toISOString(), pidSpace: currentProcessIdentity().pidSpace }),
        settleDeadline: new Date(Date.now() + 60_000),
        nextAttemptAt: new Date(Date.now() + 30 * 60_000),
      },
    });
    const [intents, teardown] = await caller().sweeps.run({ kind: "all" });
    expect(intents!.decisions).toContainEqual(expect.objectContaining({ id, verdict: "reclaim" }));
    expect(intents!.reclaimed).toBe(1);
    expect(teardown!.kind).toBe("teardown");
    expect(await h.db.db.auditEntry.count({ where: { action: "sweep.run" } })).toBe(1);
  });
});

describe("metrics access", () => {
  it("needs the scraper's token or a signed-in person; nobody else reads it", async () => {
    const token = "a-scraper-token-of-length";
    const get = (headers: Record<string, string>) => metricsResponse(h.db.db, new Request("http://x/api/metrics", { headers }), token);
    expect((await get({})).status).toBe(401);
    expect((await get({ authorization: "Bearer wrong-token-of-same-len" })).status).toBe(401);
    const ok = await get({ authorization: `Bearer ${token}` });
    expect(ok.status).toBe(200);
    expect(await ok.text()).toMatch(/runwarden_runs/);
  });
});

describe("metrics", () => {
  it("reports runs, proofs, sweeps and reclaim latency from the database", async () => {
    const { body } = await renderMetrics(h.db.db);
    expect(body).toMatch(/runwarden_runs\{status="failed",outcome="terminal_failure"\} 1/);
    expect(body).toMatch(/runwarden_proofs_total\{kind="creation_intent",verdict="reclaim"\} 1/);
    expect(body).toMatch(/runwarden_sweep_passes_total\{kind="creation_intents"\} \d+/);
    expect(body).toMatch(/runwarden_reclaim_latency_seconds\{stat="p50"\} [\d.]+/);
  });

  it("exports the provider breakers' state and the runs waiting for the provider (§2.8)", async () => {
    const db = h.db.db;
    const me = currentProcessIdentity();
    const bootId = `breaker-${crypto.randomUUID()}`;
    const since = new Date(Date.now() - 42_000);
    await db.instance.upsert({ where: { id: "inst-a" }, create: { id: "inst-a", name: "a" }, update: {} });
    await db.controllerProcess.create({
      data: { bootId, instanceId: "inst-a", pid: me.pid, startedAt: new Date(me.startedAt), hostname: me.hostname, pidSpace: me.pidSpace, providerUnavailableSince: since, providerLastError: "connect ECONNREFUSED" },
    });
    const run = await db.run.create({
      data: { instanceId: "inst-a", companyId: "co-1", taskId: `waiting-${crypto.randomUUID()}`, agent: "a", provider: "codex", target: "remote", sandboxMode: "warm", status: "running", providerWaitSince: since },
    });
    try {
      const { body } = await renderMetrics(db);
      expect(body).toMatch(/runwarden_provider_breaker_open 1\n/);
      const down = Number(/runwarden_provider_unavailable_seconds ([\d.]+)/.exec(body)?.[1]);
      expect(down).toBeGreaterThanOrEqual(42);
      expect(body).toMatch(/runwarden_runs_waiting_on_provider 1\n/);
    } finally {
      await db.run.delete({ where: { id: run.id } });
      await db.controllerProcess.delete({ where: { bootId } });
    }
  });
});
