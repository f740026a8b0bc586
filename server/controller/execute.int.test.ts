import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ProviderError } from "../providers/errors";
import type { RunnerClient } from "../providers/runner";
import { submitRun } from "../runs/submit";
import { startControllerHarness, waitFor, type ControllerHarness } from "../test/controller";

let h: ControllerHarness;
const actor = { id: "test", role: "operator" };

beforeAll(async () => {
  h = await startControllerHarness();
});
afterAll(() => h.close());

async function finished(runId: string) {
  return waitFor(`run ${runId} to finish`, async () => {
    const run = await h.db.db.run.findUniqueOrThrow({ where: { id: runId } });
    return run.status === "succeeded" || run.status === "failed" ? run : null;
  });
}

describe("executing runs", () => {
  it("runs a warm run to success and destroys its sandbox", async () => {
    const c = await h.controller();
    const run = await submitRun(h.db.db, "inst-a", { companyId: "co-1", taskId: "warm-1", agent: "a", provider: "codex", sandboxMode: "warm", turns: 3 }, actor);
    c.start();
    const done = await finished(run.id);
    expect(done.status).toBe("succeeded");
    expect(done.turnsDone).toBe(3);
    const leases = await h.db.db.environmentLease.findMany({ where: { runId: run.id } });
    expect(leases).toHaveLength(1);
    expect(leases[0]).toMatchObject({ status: "expired", acquisitionOutcome: "created", cleanupStatus: "destroyed" });
    const intents = await h.db.db.sandboxCreationIntent.findMany({ where: { runId: run.id } });
    expect(intents.map((i) => i.status)).toEqual(["committed"]);
    const sandboxes = await h.emu.admin.sandboxes({ includeDestroyed: true });
    const mine = sandboxes.filter((s) => s.labels["runwarden.run"] === run.id);
    expect(mine).toHaveLength(1);
    expect(mine[0]!.state).toMatch(/^destroy(ing|ed)$/);
    const events = await h.db.db.runEvent.findMany({ where: { runId: run.id }, orderBy: { id: "asc" } });
    expect(events.map((e) => e.type)).toEqual(
      expect.arrayContaining(["created", "claimed", "intent_committed", "lease_acquired", "runner_started", "session.open", "turn_done", "sandbox_destroyed", "run_succeeded"]),
    );
    await c.stop("test");
  });

  it("gives a per-turn run a fresh sandbox for every turn", async () => {
    const c = await h.controller();
    const run = await submitRun(h.db.db, "inst-a", { companyId: "co-1", taskId: "per-turn-1", agent: "a", provider: "codex", sandboxMode: "per_turn", turns: 3 }, actor);
    c.start();
    const done = await finished(run.id);
    expect(done.status).toBe("succeeded");
    const leases = await h.db.db.environmentLease.findMany({ where: { runId: run.id }, orderBy: { turn: "asc" } });
    expect(leases.map((l) => [l.turn, l.acquisitionOutcome, l.status])).toEqual([
      [1, "created", "expired"],
      [2, "created", "expired"],
      [3, "created", "expired"],
    ]);
    expect(new Set(leases.map((l) => l.providerLeaseId)).size).toBe(3);
    await c.stop("test");
  });

  it("a provider error in a turn is not a startup failure: recovery reattaches and the processed turn is not run again", async () => {
    const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "rw-turn-error-"));
    const marker = path.join(scratch, "marker.txt");
    // The runner ran turn 2, but its answer was lost on the way back (a proxy's 502).
    let lost = false;
    const wrapRunner = (runner: RunnerClient): RunnerClient => {
      const turn: RunnerClient["turn"] = async (sandboxId, seq, options) => {
        const result = await runner.turn(sandboxId, seq, options);
        if (seq === 2 && !lost) {
          lost = true;
          throw new ProviderError("http", `POST /toolbox/${sandboxId}/turn`, "bad gateway", { status: 502 });
        }
        return result;
      };
      return Object.assign(Object.create(runner) as RunnerClient, { turn });
    };
    const c = await h.controller({ wrapRunner, recoveryBackoffMs: 0, recoveryMaxAttempts: 3 });
    const run = await submitRun(
      h.db.db,
      "inst-a",
      { companyId: "co-1", taskId: "turn-error-1", agent: "a", provider: "codex", sandboxMode: "warm", turns: 3, agentCommand: `printf '%s\\n' "$RUNWARDEN_TURN" >> '${marker}'` },
      actor,
    );
    c.start();
    const done = await finished(run.id);
    await c.stop("test");
    expect(lost).toBe(true);
    expect({ status: done.status, turnsDone: done.turnsDone, code: done.failureCode }).toEqual({ status: "succeeded", turnsDone: 3, code: null });
    // Each turn ran exactly once, all in the one sandbox.
    expect(fs.readFileSync(marker, "utf8").trim().split("\n")).toEqual(["1", "2", "3"]);
    expect(await h.db.db.proof.count({ where: { runId: run.id, kind: "startup_failure" } })).toBe(0);
    const attempts = await h.db.db.proof.findMany({ where: { runId: run.id, kind: "recovery_attempt" } });
    expect(attempts.map((p) => p.verdict)).toEqual(["try_again"]);
    const leases = await h.db.db.environmentLease.findMany({ where: { runId: run.id } });
    expect(new Set(leases.map((l) => l.providerLeaseId)).size).toBe(1);
    fs.rmSync(scratch, { recursive: true, force: true });
  }, 60_000);
});
