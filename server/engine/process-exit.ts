import { at, check } from "./checks";
import type { Identity, PartialIdentity, ProcessExitEvidence, Probe } from "./schemas";
import type { Check, ProcessExitResult, ProcessJudgement } from "./verdicts";

/** Two start times this far apart (or more) belong to different processes (docs/evidence.md). */
export const START_TIME_TOLERANCE_MS = 1000;

function describeIdentity(i: PartialIdentity): string {
  return `${i.bootId ?? "?"} pid ${i.pid ?? "?"}`;
}

/**
 * Has the recorded controller process exited? docs/rules.md §2.4, in that order. Only `exited`
 * may end a wait; every doubt is `unknown`.
 */
export function judgeProcessExit(e: ProcessExitEvidence): ProcessExitResult {
  const checks: Check[] = [];
  const done = (verdict: ProcessExitResult["verdict"], reason: ProcessExitResult["reason"]): ProcessExitResult => ({
    kind: "process_exit",
    verdict,
    code: null,
    reason,
    checks,
  });

  const { record, observer } = e;
  const probe: Probe | null = e.probe ?? null;

  // 1. A record without pid, start time and PID space cannot be matched to any process.
  const missing = record ? (["pid", "startedAt", "pidSpace"] as const).filter((k) => record[k] == null) : [];
  const required = "pid, startedAt, pidSpace";
  const identified = record != null && missing.length === 0;
  checks.push(
    check("record_identified", identified, required, record == null ? "no record" : identified ? required : `missing ${missing.join(", ")}`),
  );
  if (!record || record.pid == null || record.startedAt == null || record.pidSpace == null) return done("unknown", "unidentified");
  const rec = { ...record, pid: record.pid, startedAt: record.startedAt, pidSpace: record.pidSpace };

  // 2. Another host or container is never judged.
  const samePidSpace = rec.pidSpace === observer.pidSpace;
  checks.push(check("same_pid_space", samePidSpace, observer.pidSpace, rec.pidSpace));
  if (!samePidSpace) return done("unknown", "foreign_pid_space");

  // 3. The observer itself.
  const self = isSelf(rec, observer);
  checks.push(check("not_self", !self, `not ${describeIdentity(observer)}`, describeIdentity(rec)));
  if (self) return done("alive", "self");

  // 4. The process table could not be read (or was not probed).
  // A probe that says nothing of the pid (pidLive null) read nothing either.
  const readable = probe?.readable === true && probe.pidLive !== null;
  checks.push(check("probe_readable", readable, true, probe ? probe.readable : null));
  if (!probe || !readable) return done("unknown", "unreadable");

  // 5. The pid is gone.
  checks.push(check("pid_live", probe.pidLive === true, true, probe.pidLive));
  if (probe.pidLive !== true) return done("exited", "pid_gone");

  // 6. A live pid whose start time cannot be read proves nothing.
  const liveStartedAt = probe.liveStartedAt ?? null;
  const liveTicks = probe.liveStartTicks ?? null;
  checks.push(check("live_start_time_readable", liveStartedAt !== null || liveTicks !== null, "a start time", liveTicks ?? liveStartedAt));
  if (liveStartedAt === null && liveTicks === null) return done("unknown", "unreadable");

  // 7. The pid was reused by another process: start ticks decide when both sides have them
  // (a stepped wall clock moves startedAt, never the ticks); else startedAt within 1 s.
  const recTicks = rec.startTicks ?? null;
  if (recTicks !== null && liveTicks !== null) {
    const sameTicks = recTicks === liveTicks;
    checks.push(check("same_start_ticks", sameTicks, recTicks, liveTicks));
    if (!sameTicks) return done("exited", "pid_recycled");
    return done("alive", "same_process");
  }
  const same = liveStartedAt !== null && Math.abs(at(liveStartedAt) - at(rec.startedAt)) < START_TIME_TOLERANCE_MS;
  checks.push(check("same_start_time", same, rec.startedAt, liveStartedAt));
  if (liveStartedAt === null) return done("unknown", "unreadable");
  if (!same) return done("exited", "pid_recycled");

  return done("alive", "same_process");
}

/**
 * The record is the observer: the same boot id, or the same pid started at the same time
 * (same PID space already established). Reading "self" too eagerly only ever says alive.
 */
function isSelf(record: PartialIdentity & { pid: number; startedAt: string }, observer: Identity): boolean {
  if (record.bootId != null && record.bootId === observer.bootId) return true;
  if (record.pid !== observer.pid) return false;
  if (record.startTicks != null && observer.startTicks != null) return record.startTicks === observer.startTicks;
  return Math.abs(at(record.startedAt) - at(observer.startedAt)) < START_TIME_TOLERANCE_MS;
}

/** Judge a stored identity as creation_intent and teardown_fence need it. */
export function judgeRecordedProcess(
  record: PartialIdentity | null | undefined,
  observer: Identity,
  probe: Probe | null | undefined,
): ProcessExitResult {
  return judgeProcessExit({ kind: "process_exit", record: record ?? null, observer, probe: probe ?? null });
}

export function judgement(r: ProcessExitResult): ProcessJudgement {
  return { verdict: r.verdict, reason: r.reason };
}
