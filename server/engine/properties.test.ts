import { fc, test } from "@fast-check/vitest";
import { describe, expect } from "vitest";
import { connectionTraces } from "./bootstrap-restart";
import { judgeCreationIntent } from "./creation-intent";
import { decide, safeDecide } from "./decide";
import { judgeBootstrapRestart } from "./bootstrap-restart";
import { judgeLeaseBinding } from "./lease-binding";
import { judgeProcessExit } from "./process-exit";
import type { Identity, LeaseBindingEvidence, PartialIdentity, Probe } from "./schemas";
import { judgeTeardownFence } from "./teardown-fence";
import {
  bootstrapRestart,
  creationIntent,
  leaseBinding,
  MIN,
  plus,
  processExit,
  runnerState,
  startupFailure,
  T0,
  teardownFence,
} from "../test/evidence";
import { verdictSchema } from "./verdicts";

// ---- arbitraries: small domains, so collisions (self, same pid, same space) happen often --

const time = fc.integer({ min: -60 * MIN, max: 60 * MIN }).map((ms) => plus(T0, ms));
const nearT0 = fc.integer({ min: -3000, max: 3000 }).map((ms) => plus(T0, ms));
const anyTime = fc.oneof(time, nearT0);
const pidSpace = fc.constantFrom("ps-a", "ps-b", "ps-c");

const identityArb: fc.Arbitrary<Identity> = fc.record({
  bootId: fc.constantFrom("b-1", "b-2", "b-3"),
  pid: fc.integer({ min: 1, max: 4 }),
  startedAt: anyTime,
  startTicks: fc.option(fc.integer({ min: 0, max: 3 }), { nil: null }),
  pidSpace,
});

const partialIdentityArb: fc.Arbitrary<PartialIdentity | null> = fc.option(
  fc.record(
    {
      bootId: fc.option(fc.constantFrom("b-1", "b-2", "b-3"), { nil: null }),
      pid: fc.option(fc.integer({ min: 1, max: 4 }), { nil: null }),
      startedAt: fc.option(anyTime, { nil: null }),
      startTicks: fc.option(fc.integer({ min: 0, max: 3 }), { nil: null }),
      pidSpace: fc.option(pidSpace, { nil: null }),
    },
    { requiredKeys: [] },
  ),
  { nil: null },
);

const probeArb: fc.Arbitrary<Probe | null> = fc.option(
  fc.record({
    readable: fc.boolean(),
    pidLive: fc.boolean(),
    liveStartedAt: fc.option(anyTime, { nil: null }),
    liveStartTicks: fc.option(fc.integer({ min: 0, max: 3 }), { nil: null }),
  }),
  { nil: null, freq: 8 },
);

const id = fc.constantFrom("a", "b", "c-1", "sbx-1", "/home/sandbox/work");

// ---- lease_binding ----------------------------------------------------------------------

const STAGED_KEYS = ["headerReadable", "sourceRunMatches", "templateDigestMatches", "runnerIdentityMatches"] as const;

const matchingBinding: fc.Arbitrary<LeaseBindingEvidence> = fc
  .record({
    path: fc.constantFrom("staged_attachment" as const, "remote_reattach" as const),
    runId: id,
    lease: id,
    cwd: id,
    outcome: fc.constantFrom("created" as const, "resumed" as const),
    staged: fc.option(fc.subarray([...STAGED_KEYS]), { nil: null }),
  })
  .map(({ path, runId, lease, cwd, outcome, staged }) =>
    leaseBinding({
      path,
      claim: { runId, remote: { providerLeaseId: lease, remoteCwd: cwd } },
      target: { runId, providerLeaseId: lease, remoteCwd: cwd, acquisitionOutcome: outcome },
      // The staged path proves every staged check (§2.1); the remote path may carry any of them.
      staged: path === "staged_attachment" ? Object.fromEntries(STAGED_KEYS.map((k) => [k, true])) : staged ? Object.fromEntries(staged.map((k) => [k, true])) : null,
    }),
  );

type Mutation = (e: LeaseBindingEvidence) => LeaseBindingEvidence;
const mutation: fc.Arbitrary<{ name: string; apply: Mutation }> = fc.oneof(
  fc.constant({ name: "same_run", apply: (e: LeaseBindingEvidence) => ({ ...e, target: { ...e.target, runId: `${e.target.runId}-other` } }) }),
  fc.constant({ name: "same_provider_lease", apply: (e: LeaseBindingEvidence) => ({ ...e, target: { ...e.target, providerLeaseId: `${e.target.providerLeaseId}x` } }) }),
  fc.constant({ name: "same_remote_cwd", apply: (e: LeaseBindingEvidence) => ({ ...e, claim: { ...e.claim, remote: { ...e.claim.remote, remoteCwd: `${e.claim.remote.remoteCwd}/sub` } } }) }),
  fc.constant({ name: "not_replacement", apply: (e: LeaseBindingEvidence) => ({ ...e, target: { ...e.target, acquisitionOutcome: "replacement" as const } }) }),
  fc.constantFrom(...STAGED_KEYS).map((key) => ({
    name: `staged_${key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)}`,
    apply: (e: LeaseBindingEvidence) => ({ ...e, staged: { ...e.staged, [key]: false } }),
  })),
);

describe("properties", () => {
  test.prop([matchingBinding], { numRuns: 200 })("a fully matching lease binding is admitted", (e) => {
    const v = judgeLeaseBinding(e);
    expect(v.verdict).toBe("admitted");
    expect(v.checks.every((c) => c.ok)).toBe(true);
  });

  test.prop([matchingBinding, mutation], { numRuns: 500 })("any single mismatch in a lease binding is refused", (e, m) => {
    const v = judgeLeaseBinding(m.apply(e));
    expect(v.verdict).toBe("refused");
    expect(v.code).toBe(e.path === "staged_attachment" ? "native_runner_staged_attachment_recovery_unproven" : "native_remote_recovery_lease_mismatch");
    expect(v.checks.filter((c) => !c.ok).map((c) => c.name)).toEqual([m.name]);
    expect(v.continuation?.code).toBe("native_continuation_requires_reconciliation");
  });

  // ---- process_exit ---------------------------------------------------------------------

  test.prop([partialIdentityArb, identityArb, probeArb], { numRuns: 1000 })(
    "a record from another PID space is never exited",
    (record, observer, probe) => {
      fc.pre(record?.pidSpace != null && record.pidSpace !== observer.pidSpace);
      const v = judgeProcessExit({ kind: "process_exit", record, observer, probe });
      expect(v.verdict).not.toBe("exited");
    },
  );

  test.prop([partialIdentityArb, identityArb, probeArb], { numRuns: 1000 })(
    "exited only with a readable probe in the same PID space, pid gone or start ≥ 1 s apart",
    (record, observer, probe) => {
      const v = judgeProcessExit({ kind: "process_exit", record, observer, probe });
      if (v.verdict !== "exited") return;
      expect(record?.pidSpace).toBe(observer.pidSpace);
      expect(probe?.readable).toBe(true);
      if (v.reason === "pid_recycled" && record?.startTicks != null && probe?.liveStartTicks != null) {
        expect(probe.liveStartTicks).not.toBe(record.startTicks);
      } else if (v.reason === "pid_recycled") {
        expect(Math.abs(Date.parse(probe?.liveStartedAt ?? "") - Date.parse(record?.startedAt ?? ""))).toBeGreaterThanOrEqual(1000);
      } else {
        expect([v.reason, probe?.pidLive]).toEqual(["pid_gone", false]);
      }
    },
  );

  test.prop([identityArb, fc.integer({ min: -5000, max: 5000 })], { numRuns: 300 })(
    "a live pid is the same process exactly when start times are under 1000 ms apart",
    (observer, delta) => {
      const record = { bootId: "b-rec", pid: observer.pid + 100, startedAt: T0, pidSpace: observer.pidSpace };
      const v = judgeProcessExit({ kind: "process_exit", record, observer, probe: { readable: true, pidLive: true, liveStartedAt: plus(T0, delta) } });
      expect(v.verdict).toBe(Math.abs(delta) < 1000 ? "alive" : "exited");
    },
  );

  // ---- unknown never ends a wait -----------------------------------------------------------

  test.prop([partialIdentityArb, identityArb, probeArb, fc.integer({ min: 1, max: 60 * MIN }), fc.boolean()], { numRuns: 1000 })(
    "creation_intent: not due and a creator not proven exited → wait",
    (creator, observer, creatorProbe, early, found) => {
      const e = creationIntent({
        now: plus(T0, 30 * MIN - early),
        intent: { creator },
        observer,
        creatorProbe,
        inspection: found ? undefined : { found: false },
      });
      const v = judgeCreationIntent(e);
      expect(v.creatorVerdict).not.toBeNull();
      if (v.creatorVerdict?.verdict !== "exited") expect(v.verdict).toBe("wait");
      else expect(v.verdict).not.toBe("wait");
    },
  );

  test.prop([partialIdentityArb, identityArb, probeArb, time], { numRuns: 1000 })(
    "teardown_fence: a fenced current claim is released early only when its claimer exited; unknown keeps it",
    (claimer, observer, claimerProbe, now) => {
      const e = teardownFence({ now, lease: { fencedUntil: plus(T0, 61 * MIN) }, claimRecord: { attemptId: "att-1", claimer }, observer, claimerProbe });
      const v = judgeTeardownFence(e);
      if (v.claimerVerdict?.verdict === "exited") expect(v).toMatchObject({ verdict: "release", reason: "claimer_exited" });
      else expect(v.verdict).toBe("keep");
      if (v.claimerVerdict?.verdict === "unknown") expect(v.reason).toBe("claimer_unknown");
    },
  );

  test.prop(
    [partialIdentityArb, identityArb, probeArb, time, time, fc.constantFrom("att-1", "att-2", "att-3"), fc.constantFrom("att-1", "att-2", "att-3")],
    { numRuns: 1000 },
  )("a teardown_fence with a superseded attempt id is never released before its fence expires", (claimer, observer, claimerProbe, now, fencedUntil, current, recorded) => {
    fc.pre(current !== recorded && Date.parse(now) < Date.parse(fencedUntil));
    const v = judgeTeardownFence(
      teardownFence({ now, lease: { claimAttemptId: current, fencedUntil }, claimRecord: { attemptId: recorded, claimer }, observer, claimerProbe }),
    );
    expect(v.verdict).toBe("keep");
  });

  // ---- bootstrap_restart ------------------------------------------------------------------

  const connectedState = fc
    .record(
      {
        lastConnectionProtocolVersion: fc.oneof(fc.integer({ min: 0, max: 9 }), fc.constant("1.0")),
        lastControllerCommandSeq: fc.integer({ min: 1, max: 50 }),
        reconnectCount: fc.integer({ min: 1, max: 5 }),
        outbox: fc.array(fc.jsonValue(), { minLength: 1, maxLength: 3 }),
        processedCommands: fc.array(fc.jsonValue(), { minLength: 1, maxLength: 3 }),
        pendingTerminalDelivery: fc.constantFrom({ seq: 1 }, true, "t-1"),
      },
      { requiredKeys: [] },
    )
    .filter((over) => Object.keys(over).length > 0)
    .map((over) => runnerState(over));

  test.prop([connectedState, fc.constantFrom("created" as const, "resumed" as const, "replacement" as const), fc.constantFrom("stopped" as const, "absent" as const)], {
    numRuns: 300,
  })("without a local proof, a runner state that ever connected is always refused", (state, acquisitionOutcome, runnerProcess) => {
    expect(connectionTraces(state).length).toBeGreaterThan(0);
    const v = judgeBootstrapRestart(bootstrapRestart({ runnerState: state, acquisitionOutcome, runnerProcess }));
    expect(v.verdict).toBe("refused");
    expect(v.code).toBe(acquisitionOutcome === "resumed" ? "runner_harness_state_mismatch: resumed_unavailable" : "native_restart_recovery_blocked");
  });

  // ---- decide on anything -----------------------------------------------------------------

  const VALID = [leaseBinding(), bootstrapRestart(), startupFailure(), processExit(), creationIntent(), teardownFence()];

  /** Every path to a value inside a bundle, so a mutation can hit any field at any depth. */
  function paths(value: unknown, prefix: (string | number)[] = []): (string | number)[][] {
    if (value === null || typeof value !== "object") return [prefix];
    const entries = Array.isArray(value) ? value.map((v, i) => [i, v] as const) : Object.entries(value);
    return [prefix, ...entries.flatMap(([k, v]) => paths(v, [...prefix, k]))];
  }

  function mutate(bundle: unknown, path: (string | number)[], replacement: unknown, remove: boolean): unknown {
    if (path.length === 0) return replacement;
    const copy = structuredClone(bundle) as Record<string | number, unknown>;
    let cur = copy;
    for (const key of path.slice(0, -1)) cur = cur[key] as Record<string | number, unknown>;
    const last = path[path.length - 1] as string | number;
    if (remove) delete cur[last];
    else cur[last] = replacement;
    return copy;
  }

  const nearlyValid = fc
    .tuple(fc.constantFrom(...VALID), fc.nat(), fc.jsonValue({ maxDepth: 2 }), fc.boolean())
    .map(([bundle, n, replacement, remove]) => {
      const all = paths(bundle);
      return mutate(bundle, all[n % all.length] ?? [], replacement, remove);
    });

  const anyBundle = fc.oneof(fc.jsonValue(), nearlyValid, fc.constantFrom(...VALID));

  test.prop([anyBundle], { numRuns: 2000 })("decide on any JSON returns a valid verdict or a field-naming error, never anything else", (bundle) => {
    const r = safeDecide(bundle);
    if (r.ok) {
      expect(verdictSchema.safeParse(r.verdict).success).toBe(true);
    } else {
      expect(r.error.message).toMatch(/^evidence(\.[^\s:]+| *)*: \S/);
      expect(r.error.message).not.toContain("\n");
      expect(r.error.message.startsWith(`${r.error.field}: `)).toBe(true);
    }
    // The throwing variant agrees, and throws nothing but EvidenceError.
    let thrown: unknown = null;
    try {
      decide(bundle);
    } catch (err) {
      thrown = err;
    }
    expect(thrown === null).toBe(r.ok);
    if (thrown !== null) expect((thrown as Error).name).toBe("EvidenceError");
  });

  test.prop([anyBundle], { numRuns: 500 })("deterministic: the same bundle gives the same answer", (bundle) => {
    const copy: unknown = structuredClone(bundle);
    expect(safeDecide(copy)).toEqual(safeDecide(bundle));
    expect(JSON.stringify(safeDecide(bundle))).toBe(JSON.stringify(safeDecide(bundle)));
  });
});
