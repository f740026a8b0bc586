import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Run } from "../db/client";
import { readRunnerState, RUNNER_STATE_PATH } from "../providers/runner";
import { retryRun } from "../runs/retry";
import { submitRun } from "../runs/submit";
import { controllerProcesses, spawnController, type ControllerProcessHandle } from "../test/controller-process";
import { startControllerHarness, waitFor, type ControllerHarness } from "../test/controller";

/**
 * The seeds' stories with real controller processes: SIGKILLed, SIGTERMed, restarted,
 * some with a wiped home. The emulator and PostgreSQL are real too.
 */

let h: ControllerHarness;
const { controller, home, live } = controllerProcesses(() => h);
const actor = { id: "test", role: "board" };

beforeAll(async () => {
  h = await startControllerHarness();
});
afterAll(() => h.close());

function run(id: string) {
  return h.db.db.run.findUniqueOrThrow({ where: { id } });
}

async function settled(runId: string, timeoutMs = 30_000) {
  return waitFor(`run ${runId} to settle`, async () => {
    const r = await run(runId);
    return r.status === "succeeded" || r.status === "failed" ? r : null;
  }, timeoutMs);
}

async function liveSandboxesOf(runId: string) {
  return (await h.emu.admin.sandboxes()).filter((s) => s.labels["runwarden.run"] === runId && !/^destroy(ing|ed)$/.test(s.state));
}

describe("a restart between an intent's commit and its lease's commit (seed 003, K4)", () => {
  it("the next controller's sweep reclaims the sandbox at once, and the run starts over by itself", async () => {
    const r = await submitRun(h.db.db, "inst-a", { companyId: "co-1", taskId: "k4-intent", agent: "a", provider: "codex", sandboxMode: "warm", turns: 2 }, actor);
    const a = await controller({ RUNWARDEN_CRASH_AT: "after_create" });
    expect((await a.exited).signal).toBe("SIGKILL");

    const intents = await h.db.db.sandboxCreationIntent.findMany({ where: { runId: r.id } });
    expect(intents.map((i) => i.status)).toEqual(["pending"]);
    expect(await h.db.db.environmentLease.count({ where: { runId: r.id } })).toBe(0);
    const orphan = await liveSandboxesOf(r.id);
    expect(orphan).toHaveLength(1);

    await controller();
    await waitFor("the orphan to be destroyed", async () => (await liveSandboxesOf(r.id)).every((s) => s.id !== orphan[0]!.id));

    const intent = await h.db.db.sandboxCreationIntent.findUniqueOrThrow({ where: { id: intents[0]!.id } });
    expect(intent.status).toBe("reclaimed");
    const proofs = await h.db.db.proof.findMany({ where: { intentId: intent.id, kind: "creation_intent" }, orderBy: { evaluatedAt: "asc" } });
    expect(proofs.map((p) => p.verdict)).toContain("reclaim");
    // "At once": reclaimed because its creator exited, long before the intent's own next look
    // (how fast in seconds is the benchmark's figure, not a timed test's).
    const reclaim = proofs.find((p) => p.verdict === "reclaim")!;
    expect(reclaim.evaluatedAt.getTime()).toBeLessThan(intents[0]!.nextAttemptAt.getTime());
    expect((proofs.at(-1)!.output as { creatorVerdict?: { verdict: string } }).creatorVerdict?.verdict).toBe("exited");

    const done = await settled(r.id);
    expect(done.status).toBe("succeeded");
    expect(done.restarts).toBe(1);
    expect(await h.db.db.run.count({ where: { taskId: "k4-intent" } })).toBe(1);
    expect(await liveSandboxesOf(r.id)).toEqual([]);
  });
});

describe("a restart during a teardown claim (seed 003, K4)", () => {
  it("the lost claim's fence ends when its claimer exited, and the sandbox is destroyed", async () => {
    // An instance of its own: the crash point fires at the first teardown claim, which must be
    // this run's lease, not one another test of this file left to clean up.
    const instance = { RUNWARDEN_INSTANCE_ID: "inst-k4" };
    await h.db.db.instance.upsert({ where: { id: "inst-k4" }, create: { id: "inst-k4", name: "k4" }, update: {} });
    const r = await submitRun(h.db.db, "inst-k4", { companyId: "co-1", taskId: "k4-teardown", agent: "a", provider: "codex", sandboxMode: "warm", turns: 1 }, actor);
    const a = await controller({ ...instance, RUNWARDEN_CRASH_AT: "during_teardown_claim" });
    expect((await a.exited).signal).toBe("SIGKILL");
    const fenced = await h.db.db.environmentLease.findFirstOrThrow({ where: { runId: r.id } });
    expect(fenced.status).toBe("pending_cleanup");
    expect(fenced.fencedUntil!.getTime()).toBeGreaterThan(Date.now() + 10 * 60_000);

    await controller(instance);
    await waitFor("the lease to expire", async () => (await h.db.db.environmentLease.findUniqueOrThrow({ where: { id: fenced.id } })).status === "expired");
    const release = await h.db.db.proof.findFirstOrThrow({ where: { leaseId: fenced.id, kind: "teardown_fence" } });
    expect(release).toMatchObject({ verdict: "release", reason: "claimer_exited" });
    expect(await liveSandboxesOf(r.id)).toEqual([]);
  });
});

describe("a restart during a teardown claim on another host (K4 across hosts)", () => {
  it("the lost claim's fence ends once its claimer's controller is silent past the window, and the sandbox is destroyed", async () => {
    // The claimer in a PID namespace of its own: no probe from here can prove it exited (a chaos
    // wave's K1 of such a controller left a finished run's sandbox fenced for 15 minutes).
    const instance = { RUNWARDEN_INSTANCE_ID: "inst-k4-host", RUNWARDEN_EXECUTOR_TIMEOUT_MS: "3000" };
    await h.db.db.instance.upsert({ where: { id: "inst-k4-host" }, create: { id: "inst-k4-host", name: "k4 host" }, update: {} });
    const r = await submitRun(h.db.db, "inst-k4-host", { companyId: "co-1", taskId: "k4-teardown-host", agent: "a", provider: "codex", sandboxMode: "warm", turns: 1 }, actor);
    const a = spawnController(
      { DATABASE_URL: h.db.url, EMULATOR_URL: h.emu.emulator.url, RUNWARDEN_CONTROLLER_HOME: home(), ...instance, RUNWARDEN_CRASH_AT: "during_teardown_claim" },
      { pidNamespace: true },
    );
    live.push(a);
    await a.exited;
    expect(a.output).toContainEqual(expect.stringMatching(/^crash point reached: during_teardown_claim/));
    const fenced = await h.db.db.environmentLease.findFirstOrThrow({ where: { runId: r.id } });
    expect(fenced).toMatchObject({ status: "pending_cleanup" });
    expect(fenced.fencedUntil!.getTime()).toBeGreaterThan(Date.now() + 10 * 60_000);

    await controller(instance);
    await waitFor("the lease to expire", async () => (await h.db.db.environmentLease.findUniqueOrThrow({ where: { id: fenced.id } })).status === "expired", 30_000);
    const release = await h.db.db.proof.findFirstOrThrow({ where: { leaseId: fenced.id, kind: "teardown_fence" } });
    expect(release).toMatchObject({ verdict: "release", reason: "claimer_silent" });
    const checks = release.checks as Array<{ name: string; ok: boolean }>;
    expect(checks.map((c) => [c.name, c.ok])).toEqual([
      ["fenced", true],
      ["fence_active", true],
      ["claimer_recorded", true],
      ["same_attempt", true],
      ["claimer_exited", false],
      ["claimer_heartbeat", true],
      ["claimer_stopped", false],
      ["claimer_silent", true],
    ]);
    expect(await liveSandboxesOf(r.id)).toEqual([]);
  });
});

describe("a graceful drain during a per-turn follow-up (seed 000, K2)", () => {
  it("the staged attachment is verified on its created lease and the run continues without Retry", async () => {
    const r = await submitRun(h.db.db, "inst-a", { companyId: "co-1", taskId: "k2-staged", agent: "codex-c1", provider: "codex", sandboxMode: "per_turn", turns: 3 }, actor);
    const a = await controller({ RUNWARDEN_TURN_MS: "1500" });
    // The follow-up turn's fresh sandbox has its session open (the staged attachment).
    await waitFor("the second turn's session", async () => {
      const x = await run(r.id);
      const lease = await h.db.db.environmentLease.findFirst({ where: { runId: r.id, status: "active", turn: 2 } });
      return x.turnsDone === 1 && x.phase === "session_open" && lease ? x : null;
    });
    a.kill("SIGTERM");
    expect((await a.exited).code).toBe(0);
    const suspended = await run(r.id);
    expect(suspended).toMatchObject({ status: "suspended", recoveryState: "awaiting_runner_reattach" });

    await controller();
    const done = await settled(r.id);
    expect(done.status).toBe("succeeded");
    expect(done.turnsDone).toBe(3);
    const binding = await h.db.db.proof.findFirstOrThrow({ where: { runId: r.id, kind: "lease_binding" } });
    expect(binding.verdict).toBe("admitted");
    expect((binding.evidence as { target: { acquisitionOutcome: string }; path: string }).target.acquisitionOutcome).toBe("created");
    expect((binding.evidence as { path: string }).path).toBe("staged_attachment");
    // Every staged check was proven, the runner's program among the released ones (§2.1).
    const checks = binding.checks as { name: string; ok: boolean }[];
    expect(checks.filter((c) => c.name.startsWith("staged_")).map((c) => [c.name, c.ok])).toEqual([
      ["staged_header_readable", true],
      ["staged_source_run_matches", true],
      ["staged_runner_program_supported", true],
      ["staged_runner_identity_matches", true],
    ]);
    const claim = await h.db.db.recoveryClaim.findFirstOrThrow({ where: { runId: r.id } });
    expect(claim).toMatchObject({ kind: "staged_attachment", restartKind: "graceful", disposition: "admitted" });
    expect(await h.db.db.run.count({ where: { previousRunId: r.id } })).toBe(0);
  });
});

describe("a per-turn run killed between runner.stop and its lease release (K4)", () => {
  /** A 3-turn per-turn run whose controller is SIGKILLed right after the give-back of turn 1 stopped its runner. */
  async function killedAfterRunnerStop(taskId: string) {
    const marker = path.join(home(), `${taskId}.turns`);
    const r = await submitRun(
      h.db.db,
      "inst-a",
      { companyId: "co-1", taskId, agent: "a", provider: "codex", sandboxMode: "per_turn", turns: 3, agentCommand: `printf '%s\\n' "$RUNWARDEN_TURN" >> '${marker}'` },
      actor,
    );
    // No sweep of its own: nothing but the give-back itself touches the turn's sandbox before the kill.
    const a = await controller({ RUNWARDEN_CRASH_AT: "after_runner_stop", RUNWARDEN_SWEEP_INTERVAL_MS: "600000" });
    expect((await a.exited).signal).toBe("SIGKILL");
    expect(a.output.join("\n")).toContain(`crash point reached: after_runner_stop run=${r.id}`);
    // Killed exactly there: turn 1 recorded, its runner stopped on purpose, its sandbox still up.
    expect(await run(r.id)).toMatchObject({ turnsDone: 1, phase: "session_open" });
    const first = await h.db.db.environmentLease.findFirstOrThrow({ where: { runId: r.id, turn: 1 } });
    const provider = h.emu.provider({ instanceId: "inst-a" });
    const state = await readRunnerState(provider, first.providerLeaseId!);
    expect({ lifecycle: state?.lifecycle, inFlight: state?.inFlight ?? null, processed: state?.processedCommands.length }).toEqual({ lifecycle: "stopped", inFlight: null, processed: 1 });
    expect((await provider.getById(first.providerLeaseId!))?.state).toBe("started");
    return { r, marker, first };
  }

  /** The next controller recovers it: no Retry, each turn once, the stopped turn's sandbox torn down. */
  async function recoveredWithoutRetry(r: { id: string }, marker: string, first: { id: string }) {
    await controller();
    const done = await settled(r.id, 60_000);
    expect({ status: done.status, turnsDone: done.turnsDone, code: done.failureCode }).toEqual({ status: "succeeded", turnsDone: 3, code: null });
    expect(fs.readFileSync(marker, "utf8").trim().split("\n")).toEqual(["1", "2", "3"]);
    expect(await h.db.db.run.count({ where: { previousRunId: r.id } })).toBe(0);
    expect(await h.db.db.proof.count({ where: { runId: r.id, code: "runner_not_resumable" } })).toBe(0);
    expect(await h.db.db.environmentLease.findUniqueOrThrow({ where: { id: first.id } })).toMatchObject({ status: "expired" });
    expect(await liveSandboxesOf(r.id)).toEqual([]);
    return h.db.db.proof.findMany({ where: { runId: r.id, kind: "recovery_route" }, orderBy: { evaluatedAt: "asc" } });
  }

  it("marked out of service with its turn, the stopped sandbox goes to the sweep and the run on to a fresh one", async () => {
    const { r, marker, first } = await killedAfterRunnerStop("k4-runner-stop");
    expect((await h.db.db.environmentLease.findUniqueOrThrow({ where: { id: first.id } })).status).toBe("pending_cleanup");
    const routes = await recoveredWithoutRetry(r, marker, first);
    expect(routes.map((p) => [p.verdict, p.reason])).toEqual([["next_turn_sandbox", "between_turn_sandboxes"]]);
  }, 120_000);

  it("left bound, as a controller that stops the runner before it releases the lease leaves it: the route gives it back (next_turn_sandbox), not runner_not_resumable", async () => {
    const { r, marker, first } = await killedAfterRunnerStop("k4-runner-stop-bound");
    // The give-back's earlier order (stop, then release): the lease is still the run's active one.
    await h.db.db.environmentLease.update({ where: { id: first.id }, data: { status: "active", cleanupStatus: null } });
    const routes = await recoveredWithoutRetry(r, marker, first);
    expect(routes.map((p) => [p.verdict, p.reason])).toEqual([
      ["read_runner", "runner_not_read"],
      ["next_turn_sandbox", "turn_sandbox_stopped"],
    ]);
    const given = routes[1]!;
    expect((given.checks as { name: string; ok: boolean }[]).at(-1)).toMatchObject({ name: "turn_sandbox_given_back", ok: true });
    expect((given.evidence as { runner: { state: { lastProcessedSeq: number; turnInFlight: number | null } } }).runner.state).toMatchObject({ lastProcessedSeq: 1, turnInFlight: null });
    const released = await h.db.db.runEvent.findFirstOrThrow({ where: { runId: r.id, type: "turn_sandbox_released", data: { path: ["leaseId"], equals: first.id } }, orderBy: { id: "desc" } });
    expect((released.data as { why?: string }).why).toMatch(/stopped/);
  }, 120_000);
});

/**
 * One kill for every scenario that starts from the same moment: a warm 3-turn run whose
 * controller was SIGKILLed between its first and second turn, its runner alive on the claimed
 * lease. One controller runs all of them and is killed once each has done its first turn; each
 * scenario then changes what it changes while no controller runs (its sandbox stopped, archived
 * or destroyed, its runner's reported directory rewritten) and one next controller recovers them
 * all. A run's recovery reads only its own rows and sandbox (docs/rules.md §2.10: each run is
 * claimed and written under its own epoch), so each test still proves its own property on its
 * own run; the set-up costs two controller starts instead of two per test.
 */
describe("a warm run whose controller was SIGKILLed after its first turn", () => {
  /**
   * The killed controller's pause before each turn. Every run must be between its first and
   * second turn at the kill (no turn in flight: the runner would write its state after a
   * scenario rewrote it, or die mid-turn with a stopped sandbox), so this outlasts the spread of
   * the runs' first turns; the next controller runs its turns with the fast default.
   */
  const KILLED_TURN_MS = "5000";
  /**
   * Eight runs start (and then recover) at once where each test used to run one: a session.open
   * slowed by that load must not become a startup failure these scenarios do not have.
   */
  const SESSION_OPEN_TIMEOUT_MS = "5000";
  interface Killed {
    r: Run;
    sandboxId: string;
    workDir: string;
    stateFile: string;
    /** The file each turn appends its number to (outside the sandbox: the emulator's are on this host), when asked. */
    marker: string | null;
  }
  interface Scenario {
    taskId: string;
    marksTurns: boolean;
    /** What happens while no controller runs the run. */
    meanwhile: (k: Killed) => Promise<void>;
    killed?: Killed;
  }
  const scenarios: Scenario[] = [];
  /** A run of this shared kill; the test reads it once the set-up has run. */
  function killedRun(taskId: string, options: { marksTurns?: boolean; meanwhile?: (k: Killed) => Promise<void> } = {}): () => Killed {
    const s: Scenario = { taskId, marksTurns: options.marksTurns ?? false, meanwhile: options.meanwhile ?? (async () => {}) };
    scenarios.push(s);
    return () => s.killed!;
  }
  let next: ControllerProcessHandle | null = null;

  beforeAll(async () => {
    for (const s of scenarios) {
      const marker = s.marksTurns ? path.join(home(), `${s.taskId}.turns`) : null;
      const agentCommand = marker ? `printf '%s\\n' "$RUNWARDEN_TURN" >> '${marker}'` : undefined;
      const r = await submitRun(h.db.db, "inst-a", { companyId: "co-1", taskId: s.taskId, agent: "a", provider: "claude", sandboxMode: "warm", turns: 3, agentCommand }, actor);
      s.killed = { r, sandboxId: "", workDir: "", stateFile: "", marker };
    }
    const ids = scenarios.map((s) => s.killed!.r.id);
    const a = await controller({ RUNWARDEN_TURN_MS: KILLED_TURN_MS, RUNWARDEN_CONCURRENCY: String(scenarios.length), RUNWARDEN_SESSION_OPEN_TIMEOUT_MS: SESSION_OPEN_TIMEOUT_MS });
    try {
      await waitFor("every run's first turn", async () => (await h.db.db.run.count({ where: { id: { in: ids }, turnsDone: { gte: 1 } } })) === ids.length, 60_000 + 5_000 * ids.length);
    } finally {
      a.kill("SIGKILL");
      await a.exited;
    }
    const provider = h.emu.provider({ instanceId: "inst-a" });
    for (const s of scenarios) {
      const k = s.killed!;
      const lease = await h.db.db.environmentLease.findFirstOrThrow({ where: { runId: k.r.id, status: "active" } });
      const sandboxHome = (await provider.homeDir(lease.providerLeaseId!))!;
      Object.assign(k, { sandboxId: lease.providerLeaseId!, workDir: path.join(sandboxHome, "work"), stateFile: path.join(sandboxHome, RUNNER_STATE_PATH) });
      // Killed where the scenarios start: one turn done and recorded, none in flight.
      const state = await readRunnerState(provider, k.sandboxId);
      expect({ task: s.taskId, turnsDone: (await run(k.r.id)).turnsDone, inFlight: state?.inFlight ?? null, processed: state?.processedCommands.length }).toEqual({ task: s.taskId, turnsDone: 1, inFlight: null, processed: 1 });
    }
    for (const s of scenarios) await s.meanwhile(s.killed!);
    next = spawnController({
      DATABASE_URL: h.db.url,
      EMULATOR_URL: h.emu.emulator.url,
      RUNWARDEN_INSTANCE_ID: "inst-a",
      RUNWARDEN_CONTROLLER_HOME: home(),
      RUNWARDEN_CONCURRENCY: String(scenarios.length),
      RUNWARDEN_SESSION_OPEN_TIMEOUT_MS: SESSION_OPEN_TIMEOUT_MS,
      RUNWARDEN_RECOVERY_BACKOFF_MS: "200",
      RUNWARDEN_RECOVERY_MAX_ATTEMPTS: "3",
    });
    await next.ready;
  }, 240_000);
  afterAll(async () => {
    next?.kill("SIGKILL");
    await next?.exited;
  });

  describe("a SIGKILL mid-run (K1)", () => {
    const k1 = killedRun("k1-warm");
    it("the next controller reattaches to the surviving runner on the claimed lease", async () => {
      const { r } = k1();
      const done = await settled(r.id, 90_000);
      expect(done.status).toBe("succeeded");
      const claim = await h.db.db.recoveryClaim.findFirstOrThrow({ where: { runId: r.id } });
      expect(claim).toMatchObject({ kind: "reattach_remote_runner", restartKind: "hard", disposition: "admitted" });
      const binding = await h.db.db.proof.findFirstOrThrow({ where: { runId: r.id, kind: "lease_binding" } });
      expect((binding.evidence as { target: { acquisitionOutcome: string } }).target.acquisitionOutcome).toBe("resumed");
      const exit = await h.db.db.proof.findFirstOrThrow({ where: { runId: r.id, kind: "process_exit" } });
      expect(exit).toMatchObject({ verdict: "exited", reason: "pid_gone" });
    }, 120_000);
  });

  describe("the remote directory is the runner's own report (§2.1)", () => {
    const same = killedRun("cwd-same");
    // The runner's state now says it works elsewhere (what a runner started in another directory writes).
    const moved = killedRun("cwd-moved", {
      meanwhile: async ({ stateFile }) => {
        const state = JSON.parse(fs.readFileSync(stateFile, "utf8")) as Record<string, unknown>;
        fs.writeFileSync(stateFile, JSON.stringify({ ...state, workDir: "/somewhere/else/work" }));
      },
    });
    const unknown = killedRun("cwd-unknown", {
      meanwhile: async ({ stateFile }) => {
        const { workDir: _dropped, ...state } = JSON.parse(fs.readFileSync(stateFile, "utf8")) as Record<string, unknown>;
        fs.writeFileSync(stateFile, JSON.stringify(state));
      },
    });

    it("the checkpoint and the lease record the directory the runner reported, and a reattach proves the same one", async () => {
      const { r, workDir } = same();
      expect(((await run(r.id)).checkpoint as { remoteCwd?: string } | null)?.remoteCwd).toBe(workDir);
      expect((await settled(r.id, 90_000)).status).toBe("succeeded");
      const binding = await h.db.db.proof.findFirstOrThrow({ where: { runId: r.id, kind: "lease_binding" } });
      expect(binding.verdict).toBe("admitted");
      expect(binding.evidence as { claim: { remote: { remoteCwd: string } }; target: { remoteCwd: string } }).toMatchObject({ claim: { remote: { remoteCwd: workDir } }, target: { remoteCwd: workDir } });
      const leases = await h.db.db.environmentLease.findMany({ where: { runId: r.id } });
      expect(leases.map((l) => l.remoteCwd)).toEqual(leases.map(() => workDir));
    }, 120_000);

    it("a runner that reports another directory than the checkpoint recorded is refused (remote_cwd_mismatch), never reattached", async () => {
      const { r } = moved();
      const done = await settled(r.id, 90_000);
      expect({ status: done.status, code: done.failureCode }).toEqual({ status: "failed", code: "native_continuation_requires_reconciliation" });
      const binding = await h.db.db.proof.findFirstOrThrow({ where: { runId: r.id, kind: "lease_binding" } });
      expect(binding).toMatchObject({ verdict: "refused", reason: "remote_cwd_mismatch", code: "native_remote_recovery_lease_mismatch" });
      expect(await h.db.db.runEvent.count({ where: { runId: r.id, type: "runner_reattached" } })).toBe(0);
    }, 120_000);

    it("a runner that reports no directory is refused (remote_cwd_unknown)", async () => {
      const { r } = unknown();
      const done = await settled(r.id, 90_000);
      expect({ status: done.status, code: done.failureCode }).toEqual({ status: "failed", code: "native_continuation_requires_reconciliation" });
      expect(await h.db.db.proof.findFirstOrThrow({ where: { runId: r.id, kind: "lease_binding" } })).toMatchObject({ verdict: "refused", reason: "remote_cwd_unknown" });
    }, 120_000);
  });

  describe("the sandbox stopped while no controller ran the run (Daytona's auto-stop)", () => {
    const provider = () => h.emu.provider({ instanceId: "inst-a" });
    // What auto-stop does: the sandbox stops and its processes (the runner) die with it.
    const stopped = killedRun("auto-stopped", {
      marksTurns: true,
      meanwhile: async ({ sandboxId }) => {
        await provider().stop(sandboxId);
        expect((await provider().getById(sandboxId))?.state).toBe("stopped");
      },
    });
    const archived = killedRun("archived", {
      marksTurns: true,
      meanwhile: async ({ sandboxId }) => {
        await provider().stop(sandboxId);
        await h.emu.admin.setState(sandboxId, "archived");
        expect((await provider().getById(sandboxId))?.state).toBe("archived");
      },
    });
    const gone = killedRun("auto-stopped-gone", {
      meanwhile: async ({ sandboxId }) => {
        await h.service().provider.destroy(sandboxId);
      },
    });
    const nameless = killedRun("auto-stopped-nameless", {
      meanwhile: async ({ r, sandboxId }) => {
        await h.db.db.environmentLease.updateMany({ where: { runId: r.id, status: "active" }, data: { sandboxName: null } });
        await h.service().provider.destroy(sandboxId);
      },
    });

    it("the next controller starts it again (a stopped_sandbox proof) and resumes the runner that died with the stop on its own state (resume_dead_runner): the run goes on, each turn once", async () => {
      const { r, marker } = stopped();
      const done = await settled(r.id, 90_000);
      // Started again once (counted per sandbox): the engine's decision to start it is a proof before
      // the start, and its verdict on what the provider showed after is the next one.
      expect(await h.db.db.runEvent.count({ where: { runId: r.id, type: "sandbox_start_attempted" } })).toBe(1);
      const ups = await h.db.db.proof.findMany({ where: { runId: r.id, kind: "stopped_sandbox" }, orderBy: { evaluatedAt: "asc" } });
      expect(ups.map((p) => [p.verdict, (p.evidence as { startAttempts: number }).startAttempts])).toEqual([
        ["start_sandbox", 0],
        ["proceed", 1],
      ]);
      // The runner process died with the stop; its state did not: the engine proves it may go on
      // from there (its own session, connected, no turn in flight) and it is resumed, not restarted.
      expect(done).toMatchObject({ status: "succeeded", turnsDone: 3, failureCode: null });
      const resume = await h.db.db.proof.findFirstOrThrow({ where: { runId: r.id, kind: "runner_resume" }, orderBy: { evaluatedAt: "asc" } });
      expect(resume).toMatchObject({ verdict: "resume", code: null });
      expect((resume.evidence as { process: string }).process).not.toBe("running");
      const claims = await h.db.db.recoveryClaim.findMany({ where: { runId: r.id }, orderBy: { createdAt: "asc" } });
      expect(claims.map((c) => [c.kind, c.disposition])).toEqual([
        ["reattach_remote_runner", "admitted"],
        ["resume_dead_runner", "resume"],
      ]);
      expect(await h.db.db.runEvent.count({ where: { runId: r.id, type: "runner_resumed" } })).toBe(1);
      // Each turn's side effect happened once, across the kill, the stop and the resume.
      expect(fs.readFileSync(marker!, "utf8").trim().split("\n")).toEqual(["1", "2", "3"]);
    }, 120_000);

    it("archived meanwhile (Daytona archives a sandbox stopped long enough): the next controller starts it from the archive and the run goes on, each turn once", async () => {
      const { r, sandboxId, marker } = archived();
      const done = await settled(r.id, 90_000);
      expect({ status: done.status, code: done.failureCode, turns: done.turnsDone }).toEqual({ status: "succeeded", code: null, turns: 3 });
      const proofs = await h.db.db.proof.findMany({ where: { runId: r.id, kind: "stopped_sandbox" }, orderBy: { evaluatedAt: "asc" } });
      // Decided on the archive, then judged on what the provider showed after the one start: up.
      expect(proofs.map((p) => [p.verdict, (p.evidence as { sandboxState: string }).sandboxState])).toEqual([
        ["start_sandbox", "archived"],
        ["proceed", "started"],
      ]);
      expect(await h.db.db.runEvent.findMany({ where: { runId: r.id, type: "sandbox_start_attempted" }, select: { data: true } })).toEqual([
        { data: expect.objectContaining({ sandboxId, restarted: true, error: null }) },
      ]);
      expect(fs.readFileSync(marker!, "utf8").trim().split("\n")).toEqual(["1", "2", "3"]);
    }, 120_000);

    it("a sandbox that is gone ends the run with sandbox_not_restartable and Retry, not a loop", async () => {
      const { r } = gone();
      const done = await settled(r.id, 90_000);
      expect(done).toMatchObject({ status: "failed", failureCode: "sandbox_not_restartable", canRetry: true });
      const end = await h.db.db.proof.findFirstOrThrow({ where: { runId: r.id, kind: "stopped_sandbox" } });
      expect(end).toMatchObject({ verdict: "end_run", code: "sandbox_not_restartable" });
      expect(await h.db.db.recoveryClaim.count({ where: { runId: r.id } })).toBeLessThanOrEqual(1);
    }, 120_000);

    it("a lease recorded without its sandbox name is judged by the sandbox's id: the same proof, the same end", async () => {
      const { r, sandboxId } = nameless();
      const done = await settled(r.id, 90_000);
      expect(done).toMatchObject({ status: "failed", failureCode: "sandbox_not_restartable", canRetry: true });
      const end = await h.db.db.proof.findFirstOrThrow({ where: { runId: r.id, kind: "stopped_sandbox" } });
      expect(end).toMatchObject({ verdict: "end_run", code: "sandbox_not_restartable", sandboxId });
    }, 120_000);
  });
});

describe("an unconnected bootstrap interrupted on a volume-free server (seed 001, K1 + K15)", () => {
  it("restarts the bootstrap from the sandbox's own runner state, with no local proof", async () => {
    const r = await submitRun(h.db.db, "inst-a", { companyId: "co-1", taskId: "k15-bootstrap", agent: "claude-acpx", provider: "claude", sandboxMode: "warm", turns: 2 }, actor);
    const a = await controller({ RUNWARDEN_CRASH_AT: "after_runner_start" });
    await a.exited;
    expect((await run(r.id)).phase).toBe("bootstrapping");

    await controller({ RUNWARDEN_CONTROLLER_HOME: home() }); // a fresh home: nothing local survives
    const done = await settled(r.id);
    expect(done.status).toBe("succeeded");
    const proof = await h.db.db.proof.findFirstOrThrow({ where: { runId: r.id, kind: "bootstrap_restart" } });
    expect(proof.verdict).toBe("restart_bootstrap");
    const evidence = proof.evidence as { localProof: unknown; acquisitionOutcome: string; runnerState: { lastConnectionProtocolVersion: unknown } };
    expect(evidence.localProof).toBeNull();
    expect(evidence.acquisitionOutcome).toBe("resumed");
    expect(evidence.runnerState.lastConnectionProtocolVersion).toBeNull();
    expect(done.failureCode).toBeNull();
  });

  it("with the same home, the local restart proof is used", async () => {
    const r = await submitRun(h.db.db, "inst-a", { companyId: "co-1", taskId: "k1-bootstrap", agent: "a", provider: "claude", sandboxMode: "per_turn", turns: 1 }, actor);
    const kept = home();
    const a = await controller({ RUNWARDEN_CRASH_AT: "after_runner_start", RUNWARDEN_CONTROLLER_HOME: kept });
    await a.exited;
    await controller({ RUNWARDEN_CONTROLLER_HOME: kept });
    const done = await settled(r.id);
    expect(done.status).toBe("succeeded");
    const proof = await h.db.db.proof.findFirstOrThrow({ where: { runId: r.id, kind: "bootstrap_restart" } });
    expect((proof.evidence as { localProof: unknown }).localProof).not.toBeNull();
  });
});

describe("a remote startup rejection through a controller process (seed 004)", () => {
  it("ends at once with native_provider_startup_rejected, and Retry starts exactly one new run", async () => {
    const r = await submitRun(h.db.db, "inst-a", { companyId: "co-1", taskId: "reject-proc", agent: "codex-planner", provider: "codex", turns: 1 }, actor);
    await h.emu.admin.setFault({ match: { runId: r.id }, fault: { kind: "reject" } });
    await controller();
    const done = await settled(r.id);
    expect(done).toMatchObject({ failureCode: "native_provider_startup_rejected", canRetry: true, owner: "board" });
    const results = await Promise.all([retryRun(h.db.db, r.id, actor), retryRun(h.db.db, r.id, actor), retryRun(h.db.db, r.id, actor)]);
    expect(new Set(results.map((x) => x.run.id)).size).toBe(1);
    expect((await settled(results[0]!.run.id)).status).toBe("succeeded");
  });
});
