import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { submitRun } from "../runs/submit";
import { LABEL_KEYS } from "../providers/labels";
import { startControllerHarness, waitFor, type ControllerHarness } from "../test/controller";
import type { Controller } from "./controller";
import { sandboxIdlePolicy } from "../engine";

/**
 * A controller against what real Daytona does that a kind emulator would not (docs/daytona.md): slow
 * starts (sandbox.controller.ts at v0.190.0: a create waits up to 30 s for `started` before it
 * answers, and answers 400 "Sandbox failed to start" when the sandbox errors meanwhile — the
 * sandbox exists and holds its name), and a snapshot without `node` (the open-source default,
 * ubuntu:22.04).
 */

let h: ControllerHarness;
const actor = { id: "test", role: "operator" as const };
/** Each test's controller, stopped after it: the next test's run is its own controller's. */
const running: Controller[] = [];

beforeAll(async () => {
  h = await startControllerHarness();
});
afterEach(async () => {
  for (const c of running.splice(0)) await c.stop("test_end");
  await h.emu.admin.clearFaults();
});
afterAll(() => h.close());

async function settled(id: string) {
  return waitFor("the run to settle", async () => {
    const r = await h.db.db.run.findUniqueOrThrow({ where: { id } });
    return r.status === "succeeded" || r.status === "failed" ? r : null;
  }, 60_000);
}

async function runSandboxes(runId: string) {
  return (await h.emu.admin.sandboxes({ includeDestroyed: true })).filter((s) => s.labels[LABEL_KEYS.run] === runId);
}

describe("a create slower than the controller waits", () => {
  it("is found by its exact name before anything else: proven this intent's, taken, and the run goes on in it; no second sandbox", async () => {
    const r = await submitRun(h.db.db, "inst-a", { companyId: "co-1", taskId: "slow-create", agent: "a", provider: "codex", turns: 2 }, actor);
    // Every create of this run takes 2.5 s to start; the controller stops waiting after 0.8 s.
    await h.emu.admin.setFault({ match: { labels: { [LABEL_KEYS.run]: r.id } }, fault: { kind: "slow_start", ms: 2_500 }, times: 1 });
    const c = await h.controller({ createTimeoutMs: 800 });
    c.start();
    running.push(c);
    const done = await settled(r.id);
    expect({ status: done.status, code: done.failureCode, turns: done.turnsDone, attempts: done.providerAttempts }).toEqual({ status: "succeeded", code: null, turns: 2, attempts: 0 });
    const found = await h.db.db.runEvent.findFirstOrThrow({ where: { runId: r.id, type: "create_found_by_name" } });
    expect(found.data).toMatchObject({ state: "creating", ownership: "owned", taken: true });
    const proof = await h.db.db.proof.findFirstOrThrow({ where: { runId: r.id, kind: "sandbox_ownership" } });
    expect(proof).toMatchObject({ verdict: "owned", sandboxId: (found.data as { sandboxId: string }).sandboxId });
    // One sandbox for the run, and its intent committed (not left to a sweep).
    expect((await runSandboxes(r.id)).map((s) => s.id)).toEqual([(found.data as { sandboxId: string }).sandboxId]);
    expect((await h.db.db.sandboxCreationIntent.findMany({ where: { runId: r.id } })).map((i) => i.status)).toEqual(["committed"]);
  });
});

describe("a create that fails while Daytona waits for it (400, the sandbox kept)", () => {
  it("leaks nothing: the errored sandbox is reclaimed by its intent, and the run goes on in a new one", async () => {
    const r = await submitRun(h.db.db, "inst-a", { companyId: "co-1", taskId: "failed-create", agent: "a", provider: "codex", turns: 1 }, actor);
    await h.emu.admin.setFault({ match: { labels: { [LABEL_KEYS.run]: r.id } }, fault: { kind: "slow_start", ms: 100, outcome: "error", errorReason: "no space left on device" }, times: 1 });
    const c = await h.controller({ sweepIntervalMs: 300 });
    c.start();
    running.push(c);
    const done = await settled(r.id);
    expect({ status: done.status, code: done.failureCode }).toEqual({ status: "succeeded", code: null });
    const failed = await h.db.db.runEvent.findFirstOrThrow({ where: { runId: r.id, type: "create_failed" } });
    expect((failed.data as { error: string }).error).toMatch(/Sandbox failed to start: no space left on device/);
    // The errored sandbox held its name: its intent's sweep finds it by that name and reclaims it.
    await waitFor("the errored sandbox reclaimed", async () => {
      const errored = (await runSandboxes(r.id)).find((s) => s.state === "error" || s.errorReason === "no space left on device");
      return errored === undefined || errored.destroyedAt !== null || errored.state === "destroying" ? true : null;
    }, 30_000);
    const intents = await h.db.db.sandboxCreationIntent.findMany({ where: { runId: r.id }, orderBy: { createdAt: "asc" } });
    expect(intents.map((i) => i.status)).toEqual(["reclaimed", "committed"]);
    // Nothing of the run's is left running at the provider but the sandbox it finished in (its teardown is the sweep's).
    const live = (await h.emu.admin.sandboxes()).filter((s) => s.labels[LABEL_KEYS.run] === r.id && s.state !== "destroying");
    expect(live.every((s) => s.state !== "error")).toBe(true);
  });
});

describe("a snapshot without node (Daytona's open-source default image, ubuntu:22.04)", () => {
  it("ends the run at once with runner_node_missing, naming the snapshot; no retry in the same snapshot, and its sandbox is given back", async () => {
    const r = await submitRun(h.db.db, "inst-a", { companyId: "co-1", taskId: "no-node", agent: "a", provider: "codex", turns: 1 }, actor);
    const c = await h.controller({ sandboxSnapshot: "ubuntu:22.04" });
    c.start();
    running.push(c);
    const done = await settled(r.id);
    expect({ status: done.status, code: done.failureCode, canRetry: done.canRetry, owner: done.owner, attempts: done.providerAttempts }).toEqual({
      status: "failed",
      code: "runner_node_missing",
      canRetry: false,
      owner: "board",
      attempts: 1,
    });
    expect(done.failureDetail).toMatch(/^the sandbox's snapshot ubuntu:22\.04 has no node on its PATH/);
    const proof = await h.db.db.proof.findFirstOrThrow({ where: { runId: r.id, kind: "startup_failure" } });
    expect(proof).toMatchObject({ verdict: "terminal_failure", code: "runner_node_missing" });
    expect((proof.evidence as { runnerMissing: unknown }).runnerMissing).toEqual({ program: "node", snapshot: "ubuntu:22.04" });
    // Made from the snapshot asked for, and torn down with the run's end.
    await waitFor("the sandbox given back", async () => {
      const mine = await runSandboxes(r.id);
      return mine.length === 1 && (mine[0]!.destroyedAt !== null || mine[0]!.state === "destroying") ? mine : null;
    }, 30_000);
    expect((await runSandboxes(r.id))[0]).toMatchObject({ snapshot: "ubuntu:22.04" });
  });
});

describe("the sandbox's own idle policy", () => {
  it("each run's sandbox is created with an auto-stop its turns cannot reach and the auto-delete asked for; the lease records both", async () => {
    const short = await submitRun(h.db.db, "inst-a", { companyId: "co-1", taskId: "idle-default", agent: "a", provider: "codex", turns: 1 }, actor);
    // A run with a two-hour budget of its own gets a longer auto-stop than the setting.
    const long = await submitRun(h.db.db, "inst-a", { companyId: "co-1", taskId: "idle-long", agent: "a", provider: "codex", turns: 1, turnTimeoutMs: 2 * 3600_000 }, actor);
    const c = await h.controller({ sandboxAutoStopMinutes: 45, sandboxAutoDeleteMinutes: 600 });
    c.start();
    running.push(c);
    const config = c.ctx.config;
    for (const [run, budget, autoStop] of [[short, config.turnTimeoutMs, Math.max(45, Math.ceil((config.turnTimeoutMs + config.turnDeadlineMarginMs) / 60_000) + 5)], [long, 2 * 3600_000, 120 + 1 + 5]] as const) {
      expect(await settled(run.id)).toMatchObject({ status: "succeeded" });
      const policy = sandboxIdlePolicy({ turnBudgetMs: budget, turnDeadlineMarginMs: config.turnDeadlineMarginMs, autoStopMinutes: 45, autoDeleteMinutes: 600 });
      expect(policy).toMatchObject({ autoStopMinutes: autoStop, autoDeleteMinutes: 600 });
      // Read back from the provider (the emulator answers Daytona's DTO) and from the lease.
      const [sandbox] = await runSandboxes(run.id);
      expect(sandbox).toMatchObject({ autoStopInterval: policy.autoStopMinutes, autoDeleteInterval: 600 });
      const lease = await h.db.db.environmentLease.findFirstOrThrow({ where: { runId: run.id, acquisitionOutcome: "created" } });
      expect({ stop: lease.autoStopMinutes, del: lease.autoDeleteMinutes, sandbox: lease.providerLeaseId }).toEqual({ stop: policy.autoStopMinutes, del: 600, sandbox: sandbox!.id });
    }
  });
});
