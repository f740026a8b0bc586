import { assertNever, at, check } from "./checks";
import { judgement, judgeRecordedProcess } from "./process-exit";
import type { TeardownFenceEvidence } from "./schemas";
import type { Check, ProcessJudgement, TeardownFenceResult } from "./verdicts";

/**
 * May a sweep end a teardown claim's fence? DOMAIN.md §2.6, in the order of EVIDENCE.md.
 * A fence ends early only for the lease's current attempt whose claimer provably exited.
 */
export function decideTeardownFence(e: TeardownFenceEvidence): TeardownFenceResult {
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

  // 5. Only a claimer proven exited ends the fence early.
  claimerVerdict = judgement(judgeRecordedProcess(claimer, e.observer, e.claimerProbe));
  checks.push(check("claimer_exited", claimerVerdict.verdict === "exited", "exited", `${claimerVerdict.verdict} (${claimerVerdict.reason})`));
  switch (claimerVerdict.verdict) {
    case "exited":
      return done("release", "claimer_exited");
    case "alive":
      return done("keep", "claimer_alive");
    case "unknown":
      return done("keep", "claimer_unknown");
    default:
      return assertNever(claimerVerdict.verdict);
  }
}
