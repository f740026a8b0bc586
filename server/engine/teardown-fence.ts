import { assertNever, at, check } from "./checks";
import { judgement, judgeRecordedProcess } from "./process-exit";
import { isSilent } from "./silence";
import type { TeardownFenceEvidence } from "./schemas";
import type { Check, ProcessJudgement, TeardownFenceResult } from "./verdicts";

/**
 * May a sweep end a teardown claim's fence? docs/rules.md §2.6, in the order of docs/evidence.md.
 * A fence ends early only for the lease's current attempt whose claimer provably exited, or,
 * on another host, whose controller stopped or fell silent past the window.
 */
export function judgeTeardownFence(e: TeardownFenceEvidence): TeardownFenceResult {
  const { lease } = e;
  const checks: Check[] = [];
  let claimerVerdict: ProcessJudgement | null = null;
  const done = (verdict: TeardownFenceResult["verdict"], reason: TeardownFenceResult["reason"]): TeardownFenceResult => ({
    kind: "teardown_fence",
    verdict,
    code: null,
    reason,
    checks,
    claimerVerdict,
  });

  // 1. Nothing fences the lease.
  checks.push(check("fenced", lease.fencedUntil !== null, "a fencedUntil time", lease.fencedUntil));
  if (lease.fencedUntil === null) return done("release", "not_fenced");

  // 2. The fence ran out by itself.
  const active = at(e.now) < at(lease.fencedUntil);
  checks.push(check("fence_active", active, `before ${lease.fencedUntil}`, e.now));
  if (!active) return done("release", "fence_expired");

  // 3. Nobody to judge.
  const record = e.claimRecord ?? null;
  const claimer = record?.claimer ?? null;
  checks.push(check("claimer_recorded", claimer !== null, "a claim record with the claimer's identity", record === null ? "no claim record" : claimer === null ? "no claimer identity" : "recorded"));
  if (record === null || claimer === null) return done("keep", "claimer_unknown");

  // 4. A newer claim that kept an older record keeps its fence.
  const sameAttempt = record.attemptId === lease.claimAttemptId;
  checks.push(check("same_attempt", sameAttempt, lease.claimAttemptId, record.attemptId));
  if (!sameAttempt) return done("keep", "attempt_superseded");

  // 5. A claimer proven exited ends the fence early.
  claimerVerdict = judgement(judgeRecordedProcess(claimer, e.observer, e.claimerProbe));
  checks.push(check("claimer_exited", claimerVerdict.verdict === "exited", "exited", `${claimerVerdict.verdict} (${claimerVerdict.reason})`));
  switch (claimerVerdict.verdict) {
    case "exited":
      return done("release", "claimer_exited");
    case "alive":
      return done("keep", "claimer_alive");
    case "unknown":
      break;
    default:
      return assertNever(claimerVerdict.verdict);
  }

  // 6. A claimer no probe can judge (another host): its controller stopped, or fell silent
  // past the window, as a run's executor is taken over (§2.10). Safe because every write of
  // a teardown is conditional on its attempt id, and its provider calls only destroy a
  // sandbox its lease already gave back.
  const beat = e.claimerHeartbeat ?? null;
  const sameController = beat !== null && !!claimer.bootId && beat.bootId === claimer.bootId;
  checks.push(check("claimer_heartbeat", sameController, claimer.bootId ?? "the claimer's boot id", beat === null ? "no heartbeat row" : beat.bootId));
  if (beat === null || !sameController) return done("keep", "claimer_unknown");
  checks.push(check("claimer_stopped", beat.stoppedAt !== null, "stopped", beat.stoppedAt ?? "running"));
  if (beat.stoppedAt !== null) return done("release", "claimer_stopped");
  const silentMs = at(e.now) - at(beat.lastSeenAt);
  // The one silence rule (§2.10), as a takeover and the stuck-runs view judge it.
  const silent = isSilent(new Date(at(beat.lastSeenAt)), new Date(at(e.now)), beat.silenceWindowMs);
  checks.push(check("claimer_silent", silent, `last seen more than ${beat.silenceWindowMs} ms before ${e.now}`, `${beat.lastSeenAt} (${silentMs} ms)`));
  return silent ? done("release", "claimer_silent") : done("keep", "claimer_unknown");
}
