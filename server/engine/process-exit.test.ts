import { describe, expect, test } from "vitest";
import { decide } from "./decide";
import { judgeProcessExit } from "./process-exit";
import type { ProcessExitEvidence } from "./schemas";
import { identity, observer, plus, processExit, T0 } from "../test/evidence";

const ALL_STEPS = [
  "record_identified",
  "same_pid_space",
  "not_self",
  "probe_readable",
  "pid_live",
  "live_start_time_readable",
  "same_start_time",
];

const cases: { name: string; e: ProcessExitEvidence; verdict: string; reason: string; steps: number }[] = [
  // no record, or a record missing pid, start time or PID-space key → unknown (unidentified)
  { name: "no record", e: processExit({ record: null }), verdict: "unknown", reason: "unidentified", steps: 1 },
  { name: "record left out", e: processExit({ record: undefined }), verdict: "unknown", reason: "unidentified", steps: 1 },
  { name: "record without pid", e: processExit({ record: { ...identity(), pid: null } }), verdict: "unknown", reason: "unidentified", steps: 1 },
  { name: "record without start time", e: processExit({ record: { bootId: "b-1", pid: 4242, pidSpace: "ps-9f3a" } }), verdict: "unknown", reason: "unidentified", steps: 1 },
  { name: "record without PID space", e: processExit({ record: { bootId: "b-1", pid: 4242, startedAt: T0 } }), verdict: "unknown", reason: "unidentified", steps: 1 },
  { name: "empty record", e: processExit({ record: {} }), verdict: "unknown", reason: "unidentified", steps: 1 },
  // a different PID-space key → unknown (foreign_pid_space)
  { name: "another PID space", e: processExit({ record: identity({ pidSpace: "ps-other" }) }), verdict: "unknown", reason: "foreign_pid_space", steps: 2 },
  { name: "another PID space, pid gone", e: processExit({ record: identity({ pidSpace: "ps-other" }), probe: { readable: true, pidLive: false, liveStartedAt: null } }), verdict: "unknown", reason: "foreign_pid_space", steps: 2 },
  // the record is the observer itself → alive (self)
  { name: "the observer's own boot id", e: processExit({ record: observer() }), verdict: "alive", reason: "self", steps: 3 },
  { name: "the observer's pid and start time without boot id", e: processExit({ record: { pid: 5151, startedAt: observer().startedAt, pidSpace: "ps-9f3a" } }), verdict: "alive", reason: "self", steps: 3 },
  { name: "the observer itself, probe unreadable", e: processExit({ record: observer(), probe: { readable: false, pidLive: false } }), verdict: "alive", reason: "self", steps: 3 },
  // the probe could not read the process table → unknown (unreadable)
  { name: "unreadable process table", e: processExit({ probe: { readable: false, pidLive: false, liveStartedAt: null } }), verdict: "unknown", reason: "unreadable", steps: 4 },
  { name: "no probe", e: processExit({ probe: null }), verdict: "unknown", reason: "unreadable", steps: 4 },
  // docs/evidence.md: an unreadable probe may give pidLive and the live start fields as null
  { name: "unreadable process table, pidLive null", e: processExit({ probe: { readable: false, pidLive: null, liveStartedAt: null, liveStartTicks: null } }), verdict: "unknown", reason: "unreadable", steps: 4 },
  // the pid does not exist → exited (pid_gone)
  { name: "pid gone", e: processExit({ probe: { readable: true, pidLive: false, liveStartedAt: null } }), verdict: "exited", reason: "pid_gone", steps: 5 },
  // a live pid whose start time cannot be read → unknown (unreadable)
  { name: "live pid, start time null", e: processExit({ probe: { readable: true, pidLive: true, liveStartedAt: null } }), verdict: "unknown", reason: "unreadable", steps: 6 },
  { name: "live pid, start time left out", e: processExit({ probe: { readable: true, pidLive: true } }), verdict: "unknown", reason: "unreadable", steps: 6 },
  // start time differs by 1 s or more → exited (pid_recycled)
  { name: "live pid started 1000 ms later", e: processExit({ probe: { readable: true, pidLive: true, liveStartedAt: plus(T0, 1000) } }), verdict: "exited", reason: "pid_recycled", steps: 7 },
  { name: "live pid started 1000 ms earlier", e: processExit({ probe: { readable: true, pidLive: true, liveStartedAt: plus(T0, -1000) } }), verdict: "exited", reason: "pid_recycled", steps: 7 },
  { name: "live pid started an hour later", e: processExit({ probe: { readable: true, pidLive: true, liveStartedAt: plus(T0, 3_600_000) } }), verdict: "exited", reason: "pid_recycled", steps: 7 },
  // otherwise → alive (same_process)
  { name: "same start time", e: processExit(), verdict: "alive", reason: "same_process", steps: 7 },
  { name: "start time 999 ms apart", e: processExit({ probe: { readable: true, pidLive: true, liveStartedAt: plus(T0, 999) } }), verdict: "alive", reason: "same_process", steps: 7 },
  { name: "same instant written with an offset", e: processExit({ probe: { readable: true, pidLive: true, liveStartedAt: "2026-11-12T02:28:11.000+02:00" } }), verdict: "alive", reason: "same_process", steps: 7 },
  { name: "the observer's pid but another start time (pid reused by the observer)", e: processExit({ record: identity({ pid: 5151 }), probe: { readable: true, pidLive: true, liveStartedAt: observer().startedAt } }), verdict: "exited", reason: "pid_recycled", steps: 7 },
];

const TICKS_STEPS = [...ALL_STEPS.slice(0, 6), "same_start_ticks"];
const ticksCases: { name: string; e: ProcessExitEvidence; verdict: string; reason: string; steps: string[] }[] = [
  {
    name: "equal ticks, wall clock 5 s apart (clock stepped)",
    e: processExit({ record: identity({ startTicks: 91234 }), probe: { readable: true, pidLive: true, liveStartedAt: plus(T0, 5000), liveStartTicks: 91234 } }),
    verdict: "alive",
    reason: "same_process",
    steps: TICKS_STEPS,
  },
  {
    name: "different ticks, same wall clock second",
    e: processExit({ record: identity({ startTicks: 91234 }), probe: { readable: true, pidLive: true, liveStartedAt: T0, liveStartTicks: 91235 } }),
    verdict: "exited",
    reason: "pid_recycled",
    steps: TICKS_STEPS,
  },
  {
    name: "equal ticks, the probe has no wall-clock start",
    e: processExit({ record: identity({ startTicks: 7 }), probe: { readable: true, pidLive: true, liveStartedAt: null, liveStartTicks: 7 } }),
    verdict: "alive",
    reason: "same_process",
    steps: TICKS_STEPS,
  },
  {
    name: "the record has no ticks: the wall clock decides",
    e: processExit({ record: identity({ startTicks: null }), probe: { readable: true, pidLive: true, liveStartedAt: plus(T0, 1000), liveStartTicks: 91234 } }),
    verdict: "exited",
    reason: "pid_recycled",
    steps: ALL_STEPS,
  },
  {
    name: "the record has no ticks and the probe only ticks",
    e: processExit({ record: identity({ startTicks: null }), probe: { readable: true, pidLive: true, liveStartedAt: null, liveStartTicks: 91234 } }),
    verdict: "unknown",
    reason: "unreadable",
    steps: ALL_STEPS,
  },
  {
    name: "the observer's pid and ticks without boot id, wall clock apart",
    e: processExit({ record: { pid: 5151, startedAt: plus(observer().startedAt, 3000), startTicks: 500, pidSpace: "ps-9f3a" }, observer: observer({ startTicks: 500 }) }),
    verdict: "alive",
    reason: "self",
    steps: ALL_STEPS.slice(0, 3),
  },
];

describe("process_exit: start ticks decide over the wall clock (§2.4)", () => {
  test.each(ticksCases)("$name → $verdict ($reason)", ({ e, verdict, reason, steps }) => {
    const v = judgeProcessExit(e);
    expect(v).toMatchObject({ kind: "process_exit", verdict, reason });
    expect(v.checks.map((c) => c.name)).toEqual(steps);
  });
});

describe("process_exit (docs/rules.md §2.4, in order)", () => {
  test.each(cases)("$name → $verdict ($reason)", ({ e, verdict, reason, steps }) => {
    const v = judgeProcessExit(e);
    expect(v).toMatchObject({ kind: "process_exit", verdict, reason, code: null });
    // The steps actually evaluated, in order; the last one decided.
    expect(v.checks.map((c) => c.name)).toEqual(ALL_STEPS.slice(0, steps));
    const last = v.checks.at(-1);
    expect(last?.ok).toBe(reason === "same_process");
    expect(v.checks.slice(0, -1).every((c) => c.ok)).toBe(true);
  });

  test("checks carry what was expected and found", () => {
    const v = judgeProcessExit(processExit({ probe: { readable: true, pidLive: true, liveStartedAt: plus(T0, 5000) } }));
    expect(v.checks.at(-1)).toEqual({ name: "same_start_time", ok: false, expected: T0, actual: plus(T0, 5000) });
    expect(judgeProcessExit(processExit({ record: { pid: 1 } })).checks[0]).toEqual({
      name: "record_identified",
      ok: false,
      expected: "pid, startedAt, pidSpace",
      actual: "missing startedAt, pidSpace",
    });
  });
});

describe("process_exit: a probe's pidLive null (docs/evidence.md)", () => {
  test("decide takes an unreadable probe with pidLive null, and refuses a readable one without it, naming the field", () => {
    const unreadable = { kind: "process_exit", record: identity(), observer: observer(), probe: { readable: false, pidLive: null, liveStartedAt: null } };
    expect(decide(unreadable)).toMatchObject({ verdict: "unknown", reason: "unreadable" });
    expect(() => decide({ ...unreadable, probe: { readable: true, pidLive: null } })).toThrow(/pidLive/);
  });
});

