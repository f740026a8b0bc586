import { describe, expect, test } from "vitest";
import type { TeardownFenceEvidence } from "./schemas";
import { judgeTeardownFence } from "./teardown-fence";
import { identity, MIN, observer, plus, T0, teardownFence } from "../test/evidence";

const LIVE = { readable: true, pidLive: true, liveStartedAt: plus(T0, -5 * MIN) };
const STEPS = ["fenced", "fence_active", "claimer_recorded", "same_attempt", "claimer_exited", "claimer_heartbeat", "claimer_stopped", "claimer_silent"];
const OTHER_HOST = { attemptId: "att-1", claimer: identity({ pidSpace: "ps-other" }) };
// The claimer's controller row as the database shows it (the evidence's `now` is T0 + 5 min).
const beat = (over: Partial<NonNullable<TeardownFenceEvidence["claimerHeartbeat"]>> = {}) => ({ bootId: OTHER_HOST.claimer.bootId!, stoppedAt: null, lastSeenAt: plus(T0, 5 * MIN - 2000), silenceWindowMs: 6000, ...over });

const cases: { name: string; e: TeardownFenceEvidence; verdict: "release" | "keep"; reason: string; steps: number }[] = [
  // (1) fencedUntil null → release / not_fenced
  { name: "no fence", e: teardownFence({ lease: { fencedUntil: null }, claimerProbe: LIVE }), verdict: "release", reason: "not_fenced", steps: 1 },
  // (2) now at or after fencedUntil → release / fence_expired
  { name: "fence ends exactly now", e: teardownFence({ now: plus(T0, 15 * MIN), claimerProbe: LIVE }), verdict: "release", reason: "fence_expired", steps: 2 },
  { name: "fence ended earlier, even with a live claimer", e: teardownFence({ now: plus(T0, 20 * MIN), claimerProbe: LIVE }), verdict: "release", reason: "fence_expired", steps: 2 },
  { name: "fence ended, superseded attempt", e: teardownFence({ now: plus(T0, 16 * MIN), lease: { claimAttemptId: "att-2" } }), verdict: "release", reason: "fence_expired", steps: 2 },
  // (3) no claim record or no claimer identity → keep / claimer_unknown
  { name: "no claim record", e: teardownFence({ claimRecord: null }), verdict: "keep", reason: "claimer_unknown", steps: 3 },
  { name: "claim record left out", e: teardownFence({ claimRecord: undefined }), verdict: "keep", reason: "claimer_unknown", steps: 3 },
  { name: "claim record without claimer identity", e: teardownFence({ claimRecord: { attemptId: "att-1", claimer: null } }), verdict: "keep", reason: "claimer_unknown", steps: 3 },
  // (4) the record's attempt id differs from the lease's → keep / attempt_superseded
  { name: "newer claim that kept an older record, older claimer gone", e: teardownFence({ lease: { claimAttemptId: "att-2" } }), verdict: "keep", reason: "attempt_superseded", steps: 4 },
  { name: "lease without a current attempt id", e: teardownFence({ lease: { claimAttemptId: null } }), verdict: "keep", reason: "attempt_superseded", steps: 4 },
  // (5) the claimer judged by process_exit
  { name: "claimer exited (pid gone)", e: teardownFence(), verdict: "release", reason: "claimer_exited", steps: 5 },
  { name: "claimer exited (pid recycled)", e: teardownFence({ claimerProbe: { readable: true, pidLive: true, liveStartedAt: plus(T0, 2 * MIN) } }), verdict: "release", reason: "claimer_exited", steps: 5 },
  { name: "claimer alive", e: teardownFence({ claimerProbe: LIVE }), verdict: "keep", reason: "claimer_alive", steps: 5 },
  { name: "claimer is this controller", e: teardownFence({ claimRecord: { attemptId: "att-1", claimer: observer() } }), verdict: "keep", reason: "claimer_alive", steps: 5 },
  { name: "claimer on another host", e: teardownFence({ claimRecord: { attemptId: "att-1", claimer: identity({ pidSpace: "ps-other" }) } }), verdict: "keep", reason: "claimer_unknown", steps: 6 },
  { name: "claimer identity partial", e: teardownFence({ claimRecord: { attemptId: "att-1", claimer: { bootId: "b-1" } } }), verdict: "keep", reason: "claimer_unknown", steps: 6 },
  { name: "process table unreadable", e: teardownFence({ claimerProbe: { readable: false, pidLive: false, liveStartedAt: null } }), verdict: "keep", reason: "claimer_unknown", steps: 6 },
  // (6) a claimer no probe can judge: its controller's heartbeat row
  { name: "other host, its controller stopped", e: teardownFence({ claimRecord: OTHER_HOST, claimerHeartbeat: beat({ stoppedAt: plus(T0, 4 * MIN) }) }), verdict: "release", reason: "claimer_stopped", steps: 7 },
  { name: "other host, its controller silent past the window", e: teardownFence({ claimRecord: OTHER_HOST, claimerHeartbeat: beat({ lastSeenAt: plus(T0, 5 * MIN - 6001) }) }), verdict: "release", reason: "claimer_silent", steps: 8 },
  { name: "other host, silent exactly the window", e: teardownFence({ claimRecord: OTHER_HOST, claimerHeartbeat: beat({ lastSeenAt: plus(T0, 5 * MIN - 6000) }) }), verdict: "keep", reason: "claimer_unknown", steps: 8 },
  { name: "other host, its controller heartbeating", e: teardownFence({ claimRecord: OTHER_HOST, claimerHeartbeat: beat() }), verdict: "keep", reason: "claimer_unknown", steps: 8 },
  { name: "other host, another controller's row", e: teardownFence({ claimRecord: OTHER_HOST, claimerHeartbeat: beat({ bootId: "b-other", stoppedAt: plus(T0, 4 * MIN) }) }), verdict: "keep", reason: "claimer_unknown", steps: 6 },
  { name: "claimer without a boot id, a stopped row", e: teardownFence({ claimRecord: { attemptId: "att-1", claimer: { pid: 7 } }, claimerHeartbeat: beat({ stoppedAt: plus(T0, 4 * MIN) }) }), verdict: "keep", reason: "claimer_unknown", steps: 6 },
  { name: "a live claimer's silent row never ends its fence", e: teardownFence({ claimerProbe: LIVE, claimerHeartbeat: beat({ bootId: identity().bootId!, lastSeenAt: plus(T0, -MIN) }) }), verdict: "keep", reason: "claimer_alive", steps: 5 },
  { name: "claimer not probed", e: teardownFence({ claimerProbe: null }), verdict: "keep", reason: "claimer_unknown", steps: 6 },
];

describe("teardown_fence (docs/rules.md §2.6, order of docs/evidence.md)", () => {
  test.each(cases)("$name → $verdict / $reason", ({ e, verdict, reason, steps }) => {
    const v = judgeTeardownFence(e);
    expect(v).toMatchObject({ kind: "teardown_fence", verdict, reason, code: null });
    expect(v.checks.map((c) => c.name)).toEqual(STEPS.slice(0, steps));
    expect(v.claimerVerdict === null).toBe(steps < 5);
  });

  test("the claimer's process_exit reason is reported", () => {
    const v = judgeTeardownFence(teardownFence({ claimRecord: { attemptId: "att-1", claimer: identity({ pidSpace: "ps-other" }) } }));
    expect(v.claimerVerdict).toEqual({ verdict: "unknown", reason: "foreign_pid_space" });
    expect(v.checks.find((c) => c.name === "claimer_exited")).toEqual({ name: "claimer_exited", ok: false, expected: "exited", actual: "unknown (foreign_pid_space)" });
    expect(v.checks.at(-1)).toEqual({ name: "claimer_heartbeat", ok: false, expected: "b-1", actual: "no heartbeat row" });
  });

  test("same_attempt shows both attempt ids", () => {
    const v = judgeTeardownFence(teardownFence({ lease: { claimAttemptId: "att-2" } }));
    expect(v.checks.at(-1)).toEqual({ name: "same_attempt", ok: false, expected: "att-2", actual: "att-1" });
  });
});
