import {
  judgeCreationIntent,
  judgeTeardownFence,
  judgeLeaseBinding,
  failureEntry,
  type CreationIntentEvidence,
  type LeaseBindingEvidence,
  type RecoveryRules,
  type TeardownFenceEvidence,
  type Verdict,
} from "../engine";
import type { ControllerConfig } from "./config";

/**
 * The engine as the controller calls it. With RUNWARDEN_TEST_BREAK_RULE (chaos-wave
 * tests only) one rule behaves as it did before its seed's fix, so a wave can show that
 * the matching check fails:
 *   staged_requires_resumed — a staged restart is admitted only on a `resumed` lease (seed 000's bug) → R2
 *   skip_creator_exit — a creator's exit does not end the intent's wait (before seed 003) → R4
 *   keep_lost_fences — a claimer's exit does not end a teardown fence (before seed 003) → R5
 */
/** The engine functions the recovery walk calls, as this controller calls them (recovery and the forecast alike). */
export function recoveryRules(config: ControllerConfig): RecoveryRules {
  return { leaseBinding: (e) => leaseBinding(config, e) };
}

export function leaseBinding(config: ControllerConfig, evidence: LeaseBindingEvidence): Verdict {
  const verdict = judgeLeaseBinding(evidence);
  if (config.breakRule !== "staged_requires_resumed" || evidence.path !== "staged_attachment") return verdict;
  if (evidence.target.acquisitionOutcome === "resumed") return verdict;
  const code = "native_runner_staged_attachment_recovery_unproven" as const;
  const entry = failureEntry(code);
  return {
    ...verdict,
    verdict: "refused",
    code,
    reason: "acquired_as_resumed",
    checks: [...verdict.checks, { name: "acquired_as_resumed", ok: false, expected: "resumed", actual: evidence.target.acquisitionOutcome }],
    outcome: entry.outcome,
    owner: entry.owner,
    canRetry: entry.canRetry,
    message: entry.message,
    nextAction: entry.nextAction,
  } as Verdict;
}

export function creationIntent(config: ControllerConfig, evidence: CreationIntentEvidence): { evidence: CreationIntentEvidence; verdict: Verdict } {
  const used = config.breakRule === "skip_creator_exit" ? { ...evidence, creatorProbe: { readable: false, pidLive: false, liveStartedAt: null } } : evidence;
  return { evidence: used, verdict: judgeCreationIntent(used) };
}

export function teardownFence(config: ControllerConfig, evidence: TeardownFenceEvidence): { evidence: TeardownFenceEvidence; verdict: Verdict } {
  const used = config.breakRule === "keep_lost_fences" ? { ...evidence, claimerProbe: { readable: false, pidLive: false, liveStartedAt: null }, claimerHeartbeat: null } : evidence;
  return { evidence: used, verdict: judgeTeardownFence(used) };
}
