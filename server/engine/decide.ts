import { judgeBootstrapRestart } from "./bootstrap-restart";
import { assertNever } from "./checks";
import { judgeCreationIntent } from "./creation-intent";
import { EvidenceError, evidenceErrorFromZod } from "./errors";
import { judgeLeaseBinding } from "./lease-binding";
import { judgeProcessExit } from "./process-exit";
import { evidenceSchema, type Evidence } from "./schemas";
import { judgeStartupFailure, STARTUP_RETRY_AFTER_SECONDS } from "./startup-failure";
import { judgeSandboxOwnership } from "./sandbox-ownership";
import { judgeTeardownFence } from "./teardown-fence";
import { judgeRecoveryAttempt } from "./recovery-attempt";
import { judgeStoppedSandbox } from "./stopped-sandbox";
import { judgeRunnerResume } from "./runner-resume";
import { judgeRecoveryRoute } from "./recovery-route";
import { judgeTurnResult } from "./turn-result";
import type { Verdict } from "./verdicts";

/** Configuration the rules leave to the installation; everything else is in the bundle. */
export interface EngineConfig {
  /** Delay before the same run is retried after an interrupted session.open. */
  retryAfterSeconds: number;
}

export const DEFAULT_ENGINE_CONFIG: EngineConfig = { retryAfterSeconds: STARTUP_RETRY_AFTER_SECONDS };

export type ParseResult = { ok: true; evidence: Evidence } | { ok: false; error: EvidenceError };
export type DecideResult = { ok: true; verdict: Verdict } | { ok: false; error: EvidenceError };

/** Validate a bundle against docs/evidence.md; unknown extra fields are dropped. */
export function parseEvidence(bundle: unknown): ParseResult {
  const parsed = evidenceSchema.safeParse(bundle);
  if (parsed.success) return { ok: true, evidence: parsed.data };
  return { ok: false, error: evidenceErrorFromZod(parsed.error, bundle) };
}

/** Run the proof of a validated bundle. */
export function judgeEvidence(evidence: Evidence, config: EngineConfig = DEFAULT_ENGINE_CONFIG): Verdict {
  switch (evidence.kind) {
    case "lease_binding":
      return judgeLeaseBinding(evidence);
    case "bootstrap_restart":
      return judgeBootstrapRestart(evidence);
    case "startup_failure":
      return judgeStartupFailure(evidence, { retryAfterSeconds: config.retryAfterSeconds });
    case "process_exit":
      return judgeProcessExit(evidence);
    case "creation_intent":
      return judgeCreationIntent(evidence);
    case "teardown_fence":
      return judgeTeardownFence(evidence);
    case "sandbox_ownership":
      return judgeSandboxOwnership(evidence);
    case "turn_result":
      return judgeTurnResult(evidence);
    case "recovery_attempt":
      return judgeRecoveryAttempt(evidence);
    case "stopped_sandbox":
      return judgeStoppedSandbox(evidence);
    case "runner_resume":
      return judgeRunnerResume(evidence);
    case "recovery_route":
      return judgeRecoveryRoute(evidence);
    default:
      return assertNever(evidence);
  }
}

/** Validate and decide, never throwing for a bad bundle. */
export function safeDecide(bundle: unknown, config: EngineConfig = DEFAULT_ENGINE_CONFIG): DecideResult {
  const parsed = parseEvidence(bundle);
  if (!parsed.ok) return parsed;
  return { ok: true, verdict: judgeEvidence(parsed.evidence, config) };
}

/** Validate and decide; throws EvidenceError naming the first bad field. */
export function decide(bundle: unknown, config: EngineConfig = DEFAULT_ENGINE_CONFIG): Verdict {
  const result = safeDecide(bundle, config);
  if (!result.ok) throw result.error;
  return result.verdict;
}
