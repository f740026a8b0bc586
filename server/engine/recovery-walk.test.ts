import { describe, expect, test } from "vitest";
import { walkRunnerState } from "../test/evidence";
import { actualRoute } from "./forecast-check";
import { forecastRecovery } from "./forecast";
import { RECOVERY_ACTS, walkRecovery, type RecoveryNeed, type RecoveryWalkAnswer, type RecoveryWalkEvidence, type WalkLease, type WalkRunnerState } from "./recovery-walk";

/**
 * The recovery walk (engine/recovery-walk.ts): what recovery needs next, in one order, and the
 * proofs on the way. The shell answers needs until an outcome; these tests answer them the way
 * recovery would (`world`), and check the order, that every act comes after the proofs that
 * justify it, that answers are prefix-stable, and that the forecast walks the same steps.
 */

const RUN = "run-1";
const SANDBOX = "sbx-1";
const CWD = "/home/sandbox/work";
const DIGEST = "digest-1";
const LEASE: WalkLease = { id: "lease-1", runId: RUN, providerLeaseId: SANDBOX, remoteCwd: CWD, acquisitionOutcome: "created" };

function base(run: Partial<RecoveryWalkEvidence["run"]> = {}, lease: WalkLease | null = LEASE): RecoveryWalkEvidence {
  return {
    now: "2026-12-07T10:00:00.000Z",
    run: { id: RUN, phase: "session_open", sandboxMode: "warm", turnsDone: 1, runnerInstanceId: "ri-1", sessionId: "s-1", checkpoint: { providerLeaseId: SANDBOX, remoteCwd: CWD }, ...run },
    limits: { maxSandboxStartAttempts: 2 },
    lease,
    runnerReleases: { releases: { [DIGEST]: 1 }, speaks: { min: 1, max: 1 } },
  };
}

const runnerState = walkRunnerState;

/** A sandbox and runner as recovery would find them, answering each need as `answerNeed` does. */
interface World {
  sandbox: string;
  /** The state a start leaves the sandbox in. */
  afterStart?: string;
  runner: WalkRunnerState | null;
  process: "running" | "stopped" | "absent" | "unknown";
  /** §2.2's files on the sandbox (default: a provider state file is there). */
  files?: boolean;
}

function answer(e: RecoveryWalkEvidence, need: RecoveryNeed, w: World): void {
  switch (need) {
    case "resume_lease":
      e.resumedLease = { ...e.lease!, id: "lease-2", acquisitionOutcome: "resumed" };
      return;
    case "sandbox":
      e.sandbox = { ok: true, state: w.sandbox, desiredState: w.sandbox, startAttempts: 0 };
      return;
    case "sandbox_start":
      e.sandboxStart = { ok: true, state: w.afterStart ?? "started", desiredState: "started", startAttempts: 1, error: null };
      return;
    case "runner":
      e.runner = { ok: true, state: w.runner, process: w.process };
      return;
    case "runner_stop":
      e.runnerStop = { ok: true, state: w.runner, process: w.process === "running" ? "stopped" : w.process };
      return;
    case "files":
      e.files = { ok: true, providerStatePresent: w.files ?? true, failoverBackup: false, archivedRotationSnapshot: false, localProof: null };
      return;
    default:
      return need;
  }
}

/** Walks to the outcome, keeping every answer on the way. */
function walk(e: RecoveryWalkEvidence, w: World): { needs: RecoveryNeed[]; answers: RecoveryWalkAnswer[]; last: Extract<RecoveryWalkAnswer, { outcome: unknown }> } {
  const needs: RecoveryNeed[] = [];
  const answers: RecoveryWalkAnswer[] = [];
  for (let i = 0; i < 10; i++) {
    const a = walkRecovery(e);
    answers.push(a);
    if ("outcome" in a) return { needs, answers, last: a };
    needs.push(a.need);
    answer(e, a.need, w);
  }
  throw new Error("the walk did not end");
}

const kinds = (a: RecoveryWalkAnswer) => a.steps.map((s) => `${s.verdict.kind}:${s.verdict.verdict}`);
const alive: World = { sandbox: "started", runner: runnerState(), process: "running" };

describe("walkRecovery: one order", () => {
  test("a warm run in its session: its lease taken up again, the sandbox looked at, the runner read, then §2.1 and the runner's resume decide", () => {
    const { needs, last } = walk(base(), alive);
    expect(needs).toEqual(["resume_lease", "sandbox", "runner"]);
    expect(kinds(last)).toEqual(["recovery_route:recover_session", "stopped_sandbox:proceed", "lease_binding:admitted", "runner_resume:reattach"]);
    expect(last.outcome).toMatchObject({ kind: "continue", path: "reattach", phase: "session_open" });
    // The binding judged the lease taken up again, not the interrupted one.
    expect(last.steps[2]).toMatchObject({ leaseId: "lease-2", sandboxId: SANDBOX, claim: { kind: "reattach_remote_runner", providerLeaseId: SANDBOX, remoteCwd: CWD } });
  });

  test("a per-turn run's staged attachment is judged on the lease it holds, never one taken up again", () => {
    const { needs, last } = walk(base({ sandboxMode: "per_turn" }), alive);
    expect(needs).toEqual(["sandbox", "runner"]);
    expect(kinds(last)).toEqual(["recovery_route:read_runner", "stopped_sandbox:proceed", "recovery_route:recover_session", "lease_binding:admitted", "runner_resume:reattach"]);
  });

  test("a bootstrap cut short: the runner read and routed, this run's own runner stopped before §2.2 judges, its files read", () => {
    const w: World = { sandbox: "started", runner: runnerState({ lifecycle: "connecting", lastConnectionProtocolVersion: null, lastControllerCommandSeq: 0, providerStatePresent: false, processedCommands: [], lastProcessedSeq: null }), process: "running" };
    const { needs, last } = walk(base({ phase: "bootstrapping", turnsDone: 0 }), { ...w, files: false });
    // A warm run's lease is taken up again before its runner is read, bootstrapping or not.
    expect(needs).toEqual(["resume_lease", "sandbox", "runner", "runner_stop", "files"]);
    expect(kinds(last)).toEqual(["recovery_route:read_runner", "stopped_sandbox:proceed", "recovery_route:recover_bootstrap", "bootstrap_restart:restart_bootstrap"]);
    expect((last.steps[3]!.evidence as { runnerProcess: string }).runnerProcess).toBe("stopped");
    expect(last.steps[3]!.claim).toMatchObject({ kind: "bootstrap_incomplete" });
  });

  test("a runner that is not this run's is never stopped", () => {
    const w: World = { sandbox: "started", runner: runnerState({ runId: "someone-else", lifecycle: "connecting", lastConnectionProtocolVersion: null }), process: "running" };
    const { needs } = walk(base({ phase: "bootstrapping", turnsDone: 0 }), w);
    expect(needs).not.toContain("runner_stop");
  });

  test("a stopped sandbox: the decision to start it is a proof before the start, the view after it a second one", () => {
    const { needs, answers, last } = walk(base(), { ...alive, sandbox: "stopped", process: "stopped" });
    expect(needs).toEqual(["resume_lease", "sandbox", "sandbox_start", "runner"]);
    const beforeStart = answers[needs.indexOf("sandbox_start")]!;
    expect(kinds(beforeStart)).toEqual(["recovery_route:recover_session", "stopped_sandbox:start_sandbox"]);
    expect(kinds(last).slice(0, 3)).toEqual(["recovery_route:recover_session", "stopped_sandbox:start_sandbox", "stopped_sandbox:proceed"]);
    expect(last.outcome).toMatchObject({ kind: "continue", path: "resume" });
  });

  test("a start that did not take: look again later, not an ending", () => {
    const { last } = walk(base(), { ...alive, sandbox: "stopped", afterStart: "stopped" });
    expect(last.outcome).toMatchObject({ kind: "look_again", sandboxWait: false });
    expect(kinds(last).at(-1)).toBe("stopped_sandbox:start_sandbox");
  });

  test("nothing reached a runner, finishing, between per-turn sandboxes, no session sandbox: decided by the route alone", () => {
    expect(walk(base({ phase: "acquiring" }, null), alive).last.outcome).toMatchObject({ kind: "continue", path: "acquire_again", phase: "acquiring" });
    expect(walk(base({ phase: "finishing" }), alive).last.outcome).toMatchObject({ kind: "continue", path: "finish" });
    expect(walk(base({ sandboxMode: "per_turn" }, null), alive).last.outcome).toMatchObject({ kind: "continue", path: "next_turn_sandbox", giveBack: null });
    expect(walk(base({}, null), alive).last.outcome).toMatchObject({ kind: "end", recoveryState: "blocked", recoveryMode: "ambiguous_state", verdict: { code: "native_continuation_requires_reconciliation" } });
  });

  test("a per-turn runner stopped with every turn recorded: its sandbox is given back", () => {
    const w: World = { sandbox: "started", runner: runnerState({ lifecycle: "stopped" }), process: "absent" };
    expect(walk(base({ sandboxMode: "per_turn" }), w).last.outcome).toMatchObject({ kind: "continue", path: "next_turn_sandbox", giveBack: { id: "lease-1" } });
  });

  test("a dead runner is resumed under a claim of its own; a live one is reattached to without one", () => {
    const dead = walk(base(), { ...alive, process: "stopped" }).last;
    expect(dead.outcome).toMatchObject({ kind: "continue", path: "resume" });
    expect(dead.steps.at(-1)!.claim).toMatchObject({ kind: "resume_dead_runner" });
    expect(walk(base(), alive).last.steps.at(-1)!.claim).toBeNull();
  });

  test("an unknown phase is looked at again (counted), never guessed", () => {
    expect(walkRecovery(base({ phase: "somewhere" }))).toMatchObject({ outcome: { kind: "look_again" }, steps: [] });
  });
});

describe("walkRecovery: properties the shells rely on", () => {
  const worlds: Array<[string, RecoveryWalkEvidence, World]> = [
    ["warm alive", base(), alive],
    ["warm stopped sandbox", base(), { ...alive, sandbox: "archived", process: "stopped" }],
    ["per-turn", base({ sandboxMode: "per_turn" }), alive],
    ["bootstrap", base({ phase: "bootstrapping", turnsDone: 0 }), { sandbox: "started", runner: runnerState({ lifecycle: "connecting", lastConnectionProtocolVersion: null }), process: "running" }],
    ["bootstrap, never started", base({ phase: "bootstrapping", turnsDone: 0 }), { sandbox: "started", runner: null, process: "absent" }],
    ["staged, another program", base({ sandboxMode: "per_turn" }), { ...alive, runner: runnerState({ programDigest: "older" }) }],
  ];

  test.each(worlds)("%s: each answer's steps begin with the steps of the answer before (recovery stores a prefix, then the rest)", (_name, e, w) => {
    const { answers } = walk(e, w);
    for (let i = 1; i < answers.length; i++) {
      const before = answers[i - 1]!.steps;
      expect(answers[i]!.steps.slice(0, before.length)).toEqual(before);
    }
  });

  test.each(worlds)("%s: no claim is decided before an act (claims land with the outcome)", (_name, e, w) => {
    const { answers } = walk(e, w);
    for (const a of answers) if ("need" in a && RECOVERY_ACTS.has(a.need)) expect(a.steps.every((s) => s.claim === null)).toBe(true);
  });

  test.each(worlds)("%s: the forecast walks the same first steps as recovery, and the route recovery's proofs show is the forecast's path", (_name, e, w) => {
    const recovered = walk(structuredClone(e), w);
    const forecast = ((): ReturnType<typeof forecastRecovery> => {
      const fe = { ...structuredClone(e), run: { ...e.run, status: "running", recoveryAttempts: 0, recoveryErrors: [] }, limits: { recoveryMaxAttempts: 3, recoveryBackoffMs: 1000, maxSandboxStartAttempts: 2 } } as Parameters<typeof forecastRecovery>[0];
      for (let i = 0; i < 5; i++) {
        const a = forecastRecovery(fe);
        if (!("need" in a)) return a;
        if (a.need === "sandbox") fe.sandbox = { ok: true, state: w.sandbox, desiredState: w.sandbox, startAttempts: 0 };
        if (a.need === "runner") fe.runner = { ok: true, state: w.runner, process: w.process };
        if (a.need === "files") fe.files = { ok: true, providerStatePresent: true, failoverBackup: false, archivedRotationSnapshot: false, localProof: null };
      }
      throw new Error("the forecast did not end");
    })();
    if ("need" in forecast) throw new Error("unreachable");
    const proofs = recovered.last.steps.map((s) => ({ kind: s.verdict.kind, verdict: s.verdict.verdict, code: s.verdict.code }));
    expect(proofs.slice(0, forecast.steps.length).map((p) => `${p.kind}:${p.verdict}`)).toEqual(forecast.steps.map((s) => `${s.verdict.kind}:${s.verdict.verdict}`));
    const route = actualRoute([{ at: e.now, bootId: "b", proofs }], { status: "running", failureCode: null, canRetry: null });
    expect(route?.route.prediction).toBe(forecast.prediction);
    if (forecast.prediction === "continues") expect(route?.route.path).toBe(forecast.path);
  });
});
