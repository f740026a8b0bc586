import { failureEntry, type FailureCode } from "./catalogue";
import { check } from "./checks";
import type { StartupFailureEvidence } from "./schemas";
import type { Check, StartupFailureResult } from "./verdicts";

/** The same run is tried again after this long (docs/rules.md §2.3). */
export const STARTUP_RETRY_AFTER_SECONDS = 30;

export interface StartupFailureConfig {
  retryAfterSeconds: number;
}

const REJECTION_CATEGORIES: readonly string[] = ["authentication", "permission", "invalid_request"];

function describeFailure(e: StartupFailureEvidence): string {
  const pf = e.providerFailure;
  const failure = pf ? `${pf.kind}${pf.category ? `/${pf.category}` : ""}` : "no provider failure";
  return `${e.target}, ${e.definite ? "definite" : "not definite"}, ${failure}`;
}

/**
 * Classify a failed `session.open` (docs/rules.md §2.3, order of docs/evidence.md): the two
 * rejection rules first, then the bounded same-run retry. A startup rejection never becomes
 * an ownership hold.
 */
export function judgeStartupFailure(
  e: StartupFailureEvidence,
  config: StartupFailureConfig = { retryAfterSeconds: STARTUP_RETRY_AFTER_SECONDS },
): StartupFailureResult {
  const checks: Check[] = [];
  const actual = describeFailure(e);
  const pf = e.providerFailure ?? null;

  const done = (code: FailureCode, reason: string): StartupFailureResult => {
    const row = failureEntry(code);
    return {
      kind: "startup_failure",
      verdict: row.outcome,
      code,
      reason,
      checks,
      outcome: row.outcome,
      owner: row.owner,
      canRetry: row.canRetry,
      message: row.message,
      nextAction: row.nextAction,
      retryAfterSeconds: row.outcome === "retryable_failure" ? config.retryAfterSeconds : null,
    };
  };

  // Rule 1: the provider itself rejected the request, on any target.
  const rejected =
    e.definite && pf !== null && pf.kind === "requires_action" && pf.category != null && REJECTION_CATEGORIES.includes(pf.category);
  checks.push(
    check("provider_rejected_request", rejected, "definite, requires_action for authentication, permission or invalid_request", actual),
  );
  if (rejected) return done("native_provider_startup_rejected", "provider_rejected");

  // Rule 2: on a remote target a same-run bootstrap cannot prove ownership, so any definite
  // failure the provider reported ends here rather than in an ownership hold (seed 004).
  const remoteRejected = e.target === "remote" && e.definite && pf !== null;
  checks.push(check("remote_definite_provider_failure", remoteRejected, "remote, definite, with a provider failure", actual));
  if (remoteRejected) return done("native_provider_startup_rejected", "remote_startup_rejected");

  // Rule 3: a sandbox that cannot run the runner at all fails alike on every try (and on a
  // Retry in the same snapshot): it ends now, naming the snapshot (docs/daytona.md, "The runner inside the sandbox"). Asked of the
  // bundles that report it (the shell saw the shell's exit 127).
  if (e.runnerMissing) {
    checks.push(check("runner_can_run", false, "node on the sandbox's PATH", `no ${e.runnerMissing.program} in snapshot ${e.runnerMissing.snapshot ?? "(unknown)"}`));
    return done("runner_node_missing", "runner_node_missing");
  }

  // Otherwise the same run is retried, at most maxAttempts provider attempts in all.
  const attemptsLeft = e.attempt < e.maxAttempts;
  checks.push(check("attempts_left", attemptsLeft, `attempt below ${e.maxAttempts}`, e.attempt));
  if (!attemptsLeft) return done("native_session_retry_exhausted", "retries_exhausted");
  // A runner that could not bind its ingress port is retried under its own code (item 10),
  // so the run says what its proof says.
  checks.push(check("runner_ingress_free", !e.bindConflict, "ingress port bound by the runner", e.bindConflict ? "bind conflict" : "bound"));
  if (e.bindConflict) return done("runner_ingress_bind_conflict", "ingress_bind_conflict");
  return done("native_session_interrupted", "session_interrupted");
}
