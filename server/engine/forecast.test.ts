import { describe, expect, test } from "vitest";
import { walkRunnerState } from "../test/evidence";
import stagedOlderRelease from "./fixtures/lease-binding-staged-older-release.json";
import neverConnected from "./fixtures/bootstrap-restart-never-connected.json";
import connected from "./fixtures/bootstrap-restart-connected.json";
import { judgeBootstrapRestart } from "./bootstrap-restart";
import { forecastRecovery, judgeRunnerProcess, type ForecastAnswer, type ForecastEvidence, type ForecastOutcome } from "./forecast";
import { judgeLeaseBinding } from "./lease-binding";
import { bootstrapRestartEvidenceSchema, leaseBindingEvidenceSchema } from "./schemas";

/** The restart forecast's walk (§2.12): recovery's proofs, in recovery's order, on evidence read without changing anything. */

const RUN = "run-1";
const SANDBOX = "sbx-1";
const CWD = "/home/sandbox/work";
const DIGEST = "digest-1";

function evidence(over: Partial<ForecastEvidence> = {}, run: Partial<ForecastEvidence["run"]> = {}): ForecastEvidence {
  return {
    now: "2026-12-06T10:00:00.000Z",
    run: {
      id: RUN,
      status: "running",
      phase: "session_open",
      sandboxMode: "warm",
      turnsDone: 1,
      runnerInstanceId: "ri-1",
      sessionId: "s-1",
      checkpoint: { providerLeaseId: SANDBOX, remoteCwd: CWD },
      recoveryAttempts: 0,
      recoveryErrors: [],
      ...run,
    },
    limits: { recoveryMaxAttempts: 3, recoveryBackoffMs: 1000, maxSandboxStartAttempts: 2 },
    lease: { id: "lease-1", runId: RUN, providerLeaseId: SANDBOX, acquisitionOutcome: "created" },
    runnerReleases: { releases: { [DIGEST]: 1 }, speaks: { min: 1, max: 1 } },
    ...over,
  };
}

const state = walkRunnerState;

const started = { ok: true as const, state: "started", desiredState: "started", startAttempts: 0 };

function outcome(a: ForecastAnswer): ForecastOutcome {
  if ("need" in a) throw new Error(`the walk still needs ${a.need}`);
  return a;
}

const kinds = (o: ForecastOutcome) => o.steps.map((s) => `${s.verdict.kind}:${s.verdict.verdict}`);

describe("forecastRecovery asks for readings in recovery's order", () => {
  test("a warm run mid-turn: sandbox, then runner; alive on the proven lease → continues by reattach", () => {
    expect(forecastRecovery(evidence())).toEqual({ need: "sandbox" });
    expect(forecastRecovery(evidence({ sandbox: started }))).toEqual({ need: "runner" });
    const o = outcome(forecastRecovery(evidence({ sandbox: started, runner: { ok: true, state: state(), process: "running" } })));
    expect(o).toMatchObject({ prediction: "continues", path: "reattach", code: null });
    expect(kinds(o)).toEqual(["recovery_route:recover_session", "stopped_sandbox:proceed", "lease_binding:admitted", "runner_resume:reattach"]);
    // A warm lease is taken up again as `resumed` before the binding (recovery's resumeLease).
    expect((o.steps[2]!.evidence as { target: { acquisitionOutcome: string } }).target.acquisitionOutcome).toBe("resumed");
  });

  test("nothing reached a runner: no reading at all → acquire again", () => {
    const o = outcome(forecastRecovery(evidence({ lease: null }, { phase: "acquiring", turnsDone: 0 })));
    expect(o).toMatchObject({ prediction: "continues", path: "acquire_again" });
    expect(kinds(o)).toEqual(["recovery_route:restart_acquire"]);
  });

  test("finishing → finish; per-turn between sandboxes → next_turn_sandbox", () => {
    expect(outcome(forecastRecovery(evidence({}, { phase: "finishing" })))).toMatchObject({ path: "finish" });
    expect(outcome(forecastRecovery(evidence({ lease: null }, { sandboxMode: "per_turn" })))).toMatchObject({ path: "next_turn_sandbox" });
  });

  test("a per-turn sandbox given back (own state stopped, process gone, every turn recorded) → next_turn_sandbox", () => {
    const o = outcome(
      forecastRecovery(evidence({ sandbox: started, runner: { ok: true, state: state({ lifecycle: "stopped" }), process: "stopped" } }, { sandboxMode: "per_turn" })),
    );
    expect(o).toMatchObject({ prediction: "continues", path: "next_turn_sandbox" });
    expect(kinds(o)).toEqual(["recovery_route:read_runner", "stopped_sandbox:proceed", "recovery_route:next_turn_sandbox"]);
  });

  test("a warm run past session.open with no sandbox: ends with the route's refusal and Retry", () => {
    const o = outcome(forecastRecovery(evidence({ lease: null })));
    expect(o).toMatchObject({ prediction: "ends", code: "native_continuation_requires_reconciliation", restsIn: "native_continuation_requires_reconciliation", canRetry: true });
  });
});

describe("lease binding (§2.1) in the forecast", () => {
  test("a replaced per-turn lease: ends with the staged refusal, resting in the continuation code with Retry", () => {
    const o = outcome(
      forecastRecovery(
        evidence({ lease: { id: "lease-2", runId: RUN, providerLeaseId: SANDBOX, acquisitionOutcome: "replacement" }, sandbox: started, runner: { ok: true, state: state(), process: "running" } }, { sandboxMode: "per_turn" }),
      ),
    );
    expect(o).toMatchObject({ prediction: "ends", code: "native_runner_staged_attachment_recovery_unproven", restsIn: "native_continuation_requires_reconciliation", owner: "board", canRetry: true });
    expect(kinds(o)).toEqual(["recovery_route:read_runner", "stopped_sandbox:proceed", "recovery_route:recover_session", "lease_binding:refused"]);
    expect(o.steps[3]!.verdict.checks.find((c) => c.name === "not_replacement")).toMatchObject({ ok: false, actual: "replacement" });
  });

  test("the staged fixture: the forecast gives the binding exactly the fixture's evidence and gets the engine's verdict", () => {
    const f = leaseBindingEvidenceSchema.parse(stagedOlderRelease);
    const program = f.staged!.runnerProgram!;
    const o = outcome(
      forecastRecovery(
        evidence(
          {
            lease: { id: "l", runId: f.target.runId, providerLeaseId: f.target.providerLeaseId, acquisitionOutcome: f.target.acquisitionOutcome },
            sandbox: started,
            runner: { ok: true, state: state({ runId: f.claim.runId, workDir: f.target.remoteCwd, programDigest: program.digest }), process: "running" },
            runnerReleases: { releases: { [program.digest!]: program.protocol!, [DIGEST]: 1 }, speaks: program.speaks },
          },
          { id: f.claim.runId, sandboxMode: "per_turn", checkpoint: f.claim.remote },
        ),
      ),
    );
    const binding = o.steps.find((s) => s.verdict.kind === "lease_binding")!;
    expect(binding.evidence).toEqual(f);
    expect(binding.verdict).toEqual(judgeLeaseBinding(f));
    expect(o).toMatchObject({ prediction: "continues", path: "reattach" });
  });

  test("a checkpoint that names no lease: refused on the remote path", () => {
    const o = outcome(forecastRecovery(evidence({ sandbox: started, runner: { ok: true, state: state(), process: "running" } }, { checkpoint: { providerLeaseId: null, remoteCwd: null } })));
    expect(o).toMatchObject({ prediction: "ends", code: "native_remote_recovery_lease_mismatch", restsIn: "native_continuation_requires_reconciliation" });
  });

  test("a lease binding handed in by the caller is the one used (the controller's break rule)", () => {
    const o = outcome(
      forecastRecovery(evidence({ sandbox: started, runner: { ok: true, state: state(), process: "running" } }), {
        leaseBinding: (e) => ({ ...judgeLeaseBinding(e), verdict: "refused", code: "native_remote_recovery_lease_mismatch" }),
      }),
    );
    expect(o).toMatchObject({ prediction: "ends", code: "native_remote_recovery_lease_mismatch" });
  });
});

describe("a dead runner (runner_resume)", () => {
  test("gone, resumable on its own state → continues by resume", () => {
    const o = outcome(forecastRecovery(evidence({ sandbox: started, runner: { ok: true, state: state({ lifecycle: "suspended" }), process: "stopped" } })));
    expect(o).toMatchObject({ prediction: "continues", path: "resume" });
  });

  test("gone with a turn in flight → ends runner_not_resumable with Retry", () => {
    const o = outcome(forecastRecovery(evidence({ sandbox: started, runner: { ok: true, state: state({ inFlightSeq: 2 }), process: "absent" } })));
    expect(o).toMatchObject({ prediction: "ends", code: "runner_not_resumable", restsIn: "runner_not_resumable", canRetry: true });
  });

  test("a process that cannot be judged → ends (process_unknown), as recovery would", () => {
    const o = outcome(forecastRecovery(evidence({ sandbox: started, runner: { ok: true, state: state(), process: "unknown" } })));
    expect(o.steps.at(-1)!.verdict).toMatchObject({ kind: "runner_resume", reason: "process_unknown" });
    expect(o.prediction).toBe("ends");
  });
});

describe("a sandbox that is not started (stopped_sandbox), never started by the forecast", () => {
  test("stopped with start attempts left → continues by start_sandbox, the runner not read", () => {
    const o = outcome(forecastRecovery(evidence({ sandbox: { ok: true, state: "stopped", desiredState: "stopped", startAttempts: 0 } })));
    expect(o).toMatchObject({ prediction: "continues", path: "start_sandbox" });
    expect(kinds(o)).toEqual(["recovery_route:recover_session", "stopped_sandbox:start_sandbox"]);
  });

  test("stopped with its start attempts spent, or gone → ends sandbox_not_restartable", () => {
    expect(outcome(forecastRecovery(evidence({ sandbox: { ok: true, state: "stopped", desiredState: "stopped", startAttempts: 2 } })))).toMatchObject({ prediction: "ends", code: "sandbox_not_restartable" });
    expect(outcome(forecastRecovery(evidence({ sandbox: { ok: true, state: null, desiredState: null, startAttempts: 0 } })))).toMatchObject({ prediction: "ends", code: "sandbox_not_restartable" });
  });

  test("in a transition → wait_for_sandbox while attempts are left, ends when the bound is reached", () => {
    const moving = { ok: true as const, state: "starting", desiredState: "started", startAttempts: 0 };
    const o = outcome(forecastRecovery(evidence({ sandbox: moving })));
    expect(o).toMatchObject({ prediction: "continues", path: "wait_for_sandbox" });
    expect(kinds(o)).toEqual(["recovery_route:recover_session", "stopped_sandbox:wait", "recovery_attempt:try_again"]);
    expect(outcome(forecastRecovery(evidence({ sandbox: moving }, { recoveryAttempts: 2 })))).toMatchObject({ prediction: "ends", code: "native_recovery_attempts_exhausted" });
  });
});

describe("a read that fails goes to the engine's recovery_attempt judgement (§2.8)", () => {
  const unavailable = { message: "connect ECONNREFUSED", failure: { kind: "unreachable" as const, status: null, code: null, retryAfterMs: null } };

  test("the provider unavailable (its probe too) → continues by waiting for it, uncounted", () => {
    const o = outcome(forecastRecovery(evidence({ sandbox: { ok: false, error: { ...unavailable, provider: { reachable: false, unavailableSince: "2026-12-06T09:59:00.000Z", lastError: "refused", nextProbeAt: null } } } })));
    expect(o).toMatchObject({ prediction: "continues", path: "wait_for_provider", readError: "connect ECONNREFUSED" });
    expect(o.steps.at(-1)!.verdict).toMatchObject({ kind: "recovery_attempt", verdict: "wait" });
  });

  test("a runner that answers garbage → left to an operator while attempts are left, ends when they are spent", () => {
    const garbage = { ok: false as const, error: { message: "the runner state is not JSON", failure: { kind: "garbage" as const, status: null, code: null, retryAfterMs: null } } };
    const o = outcome(forecastRecovery(evidence({ sandbox: started, runner: garbage })));
    expect(o).toMatchObject({ prediction: "operator", path: null, readError: "the runner state is not JSON" });
    expect(outcome(forecastRecovery(evidence({ sandbox: started, runner: garbage }, { recoveryAttempts: 2 })))).toMatchObject({
      prediction: "ends",
      code: "native_recovery_attempts_exhausted",
      canRetry: true,
    });
  });

  test("an unknown phase is counted like recovery's throw", () => {
    expect(outcome(forecastRecovery(evidence({}, { phase: "warping" })))).toMatchObject({ prediction: "operator" });
  });
});

describe("bootstrapping (read_runner, then §2.2)", () => {
  const boot = (over: Partial<ForecastEvidence>) => evidence(over, { phase: "bootstrapping", turnsDone: 0 });
  const files = { ok: true as const, providerStatePresent: false, failoverBackup: false, archivedRotationSnapshot: false, localProof: null };

  test("no runner state and no process → bootstrap_fresh", () => {
    const o = outcome(forecastRecovery(boot({ sandbox: started, runner: { ok: true, state: null, process: "absent" } })));
    expect(o).toMatchObject({ prediction: "continues", path: "bootstrap_fresh" });
  });

  test("the never-connected fixture: asks for the files, then the engine's verdict on exactly that evidence", () => {
    const f = bootstrapRestartEvidenceSchema.parse(neverConnected);
    const s = f.runnerState!;
    const e = boot({
      lease: { id: "l", runId: f.run.id, providerLeaseId: SANDBOX, acquisitionOutcome: f.acquisitionOutcome },
      sandbox: started,
      runner: { ok: true, state: state({ ...s, lastConnectionProtocolVersion: s.lastConnectionProtocolVersion ?? null, providerStatePresent: false, lastProcessedSeq: null }), process: f.runnerProcess },
    });
    e.run = { ...e.run, id: f.run.id, runnerInstanceId: f.run.runnerInstanceId, sessionId: f.run.sessionId, sandboxMode: "per_turn" };
    expect(forecastRecovery(e)).toEqual({ need: "files" });
    const o = outcome(forecastRecovery({ ...e, files }));
    const step = o.steps.find((x) => x.verdict.kind === "bootstrap_restart")!;
    expect(step.evidence).toEqual(f);
    expect(step.verdict).toEqual(judgeBootstrapRestart(f));
    expect(o).toMatchObject({ prediction: "continues", path: "bootstrap_restart" });
  });

  test("the connected fixture without a local proof → ends with the engine's refusal", () => {
    const f = bootstrapRestartEvidenceSchema.parse(connected);
    const s = f.runnerState!;
    const e = boot({
      lease: { id: "l", runId: f.run.id, providerLeaseId: SANDBOX, acquisitionOutcome: f.acquisitionOutcome },
      sandbox: started,
      // Not a reattachable lifecycle with a connection, so the route goes to §2.2.
      runner: { ok: true, state: state({ ...s, lifecycle: "recoverable_failure", lastConnectionProtocolVersion: s.lastConnectionProtocolVersion ?? null, providerStatePresent: false, lastProcessedSeq: null }), process: "stopped" },
      files,
    });
    e.run = { ...e.run, id: f.run.id, runnerInstanceId: f.run.runnerInstanceId, sessionId: f.run.sessionId };
    const o = outcome(forecastRecovery(e));
    expect(o.prediction).toBe("ends");
    expect(o.code).toBe(judgeBootstrapRestart({ ...f, runnerState: { ...s, lifecycle: "recoverable_failure" }, runnerProcess: "stopped", localProof: null }).code);
  });

  test("its own live runner is assumed stopped first, as recovery stops it before §2.2 judges", () => {
    const o = outcome(
      forecastRecovery(
        boot({ sandbox: started, runner: { ok: true, state: state({ lifecycle: "connecting", lastConnectionProtocolVersion: null, lastControllerCommandSeq: 0, processedCommands: [], lastProcessedSeq: null, providerStatePresent: false }), process: "running" }, files }),
      ),
    );
    expect((o.steps.at(-1)!.evidence as { runnerProcess: string }).runnerProcess).toBe("stopped");
    expect(o).toMatchObject({ prediction: "continues", path: "bootstrap_restart" });
  });
});

describe("judgeRunnerProcess: runnerd's own `alive` rule on a read-only /proc look", () => {
  const stat = (ticks: number, st = "S") => `4242 (node) ${st} 1 4242 4242 0 -1 4194560 100 0 0 0 1 1 0 0 20 0 1 0 ${ticks} 1000 10`;
  test.each([
    ["no state", null, { procfs: true, stat: null }, "absent"],
    ["a state without a process", { process: null }, { procfs: true, stat: null }, "stopped"],
    ["the pid is gone", { process: { pid: 4242, startTicks: 77 } }, { procfs: true, stat: null }, "stopped"],
    ["the same ticks", { process: { pid: 4242, startTicks: 77 } }, { procfs: true, stat: stat(77) }, "running"],
    ["a recycled pid", { process: { pid: 4242, startTicks: 77 } }, { procfs: true, stat: stat(78) }, "stopped"],
    ["a zombie", { process: { pid: 4242, startTicks: 77 } }, { procfs: true, stat: stat(77, "Z") }, "stopped"],
    ["no recorded ticks, the pid lives", { process: { pid: 4242, startTicks: null } }, { procfs: true, stat: stat(5) }, "running"],
    ["no procfs", { process: { pid: 4242, startTicks: 77 } }, { procfs: false, stat: null }, "unknown"],
  ] as const)("%s", (_name, s, look, expected) => {
    expect(judgeRunnerProcess(s, look)).toBe(expected);
  });
});
