/**
 * The failure-code catalogue (docs/rules.md §3). The engine, the API, the UI and the chaos
 * reports all read this one table; nothing else decides a code's outcome, owner, Retry or
 * wording.
 */

// No zod here: the browser imports this table (server/shared/engine.ts), and the schemas that
// describe it live in ./catalogue-schemas.ts so the pages do not carry zod.

export const OUTCOME_CLASSES = ["retryable_failure", "terminal_failure"] as const;
export type OutcomeClass = (typeof OUTCOME_CLASSES)[number];

export const OWNERS = ["agent", "board"] as const;
export type Owner = (typeof OWNERS)[number];

/** One row of the catalogue: the one shape of a code's meaning wherever it is stored or shown (its schema: `catalogueRowSchema`). */
export interface CatalogueRow {
  outcome: OutcomeClass;
  owner: Owner;
  /** Whether the board sees a Retry button (docs/rules.md §2.7: terminal failures only). */
  canRetry: boolean;
  /** The plain sentence a board user reads. */
  message: string;
  /** One short line: what happened, then what to do. */
  nextAction: string;
}

export const FAILURE_CATALOGUE = {
  native_session_interrupted: {
    outcome: "retryable_failure",
    owner: "agent",
    canRetry: false,
    message: "The agent's session stopped before it could start working. Runwarden will try again on its own.",
    nextAction: "The session was interrupted: nothing to do, it is tried again automatically after a short delay",
  },
  native_session_retry_exhausted: {
    outcome: "terminal_failure",
    owner: "board",
    canRetry: true,
    message: "The agent's session could not be started, even after three tries.",
    nextAction: "The session failed to start on every attempt it was given: check that the provider is working, then Retry",
  },
  native_provider_startup_rejected: {
    outcome: "terminal_failure",
    owner: "board",
    canRetry: true,
    message: "The AI provider refused to start the session, so no work was done.",
    nextAction: "The provider refused to start the session: fix the credentials, then Retry",
  },
  native_runner_staged_attachment_recovery_unproven: {
    outcome: "terminal_failure",
    owner: "board",
    canRetry: true,
    message:
      "After a server restart, Runwarden could not prove the run was still on its own sandbox, so it did not continue the run.",
    nextAction: "The run could not safely continue after a restart: Retry to start it again",
  },
  native_remote_recovery_lease_mismatch: {
    outcome: "terminal_failure",
    owner: "board",
    canRetry: true,
    message:
      "After a server restart, the sandbox that was found is not the one the run was using, so Runwarden did not reconnect to it.",
    nextAction: "The run's sandbox did not match after a restart: Retry to start it again",
  },
  native_continuation_requires_reconciliation: {
    outcome: "terminal_failure",
    owner: "board",
    canRetry: true,
    message: "The run stopped during a server restart and cannot carry on by itself.",
    nextAction: "The run could not continue after a restart: Retry to start it again",
  },
  "runner_harness_state_mismatch: resumed_unavailable": {
    outcome: "terminal_failure",
    owner: "board",
    canRetry: true,
    message: "After a server restart, the progress saved in the run's sandbox could not be picked up again.",
    nextAction: "The run's saved progress could not be picked up: Retry to start it again",
  },
  "runner_harness_state_mismatch: resumed_not_suspended": {
    outcome: "terminal_failure",
    owner: "board",
    canRetry: true,
    message: "The run was not paused cleanly before the server restarted, so its saved progress cannot be trusted.",
    nextAction: "The run was not paused cleanly: Retry to start it again",
  },
  // The agent's own command failed a turn (docs/rules.md, "Turns"): the work is the agent's to fix, and
  // Retry runs the task again once it is.
  agent_command_failed: {
    outcome: "terminal_failure",
    owner: "agent",
    canRetry: true,
    message: "The agent's command stopped with an error during a turn, so the run ended there.",
    nextAction: "The agent's command failed: read the turn log, fix the command or its inputs, then Retry",
  },
  // A turn ran past its budget (docs/rules.md, "Turns"): the runner killed the agent's processes (or
  // never answered within the budget and a margin), so the paid sandbox does not stay awake
  // for ever. The agent's to fix; Retry runs the task again.
  agent_turn_timeout: {
    outcome: "terminal_failure",
    owner: "agent",
    canRetry: true,
    message: "The agent's command ran past the time allowed for one turn, so Runwarden stopped it and ended the run.",
    nextAction: "The agent's turn took too long: read the turn log, make the command finish sooner or allow more time, then Retry",
  },
  runner_ingress_bind_conflict: {
    outcome: "retryable_failure",
    owner: "agent",
    canRetry: false,
    message: "Something else in the sandbox was using the connection the agent needs, so the agent could not start yet.",
    nextAction: "The sandbox was busy: nothing to do, it is tried again automatically",
  },
  // The sandbox's image has no `node` (Daytona's open-source default snapshot, ubuntu:22.04,
  // has none): the runner cannot run there, and a Retry in the same snapshot would fail alike (docs/daytona.md, "The runner inside the sandbox").
  runner_node_missing: {
    outcome: "terminal_failure",
    owner: "board",
    canRetry: false,
    message: "The sandbox's snapshot has no Node.js, which Runwarden's runner needs, so the agent could not be started.",
    nextAction: "Use a snapshot with Node.js 18 or later (RUNWARDEN_SANDBOX_SNAPSHOT), then submit the task again",
  },
  // The sandbox stopped (Daytona's auto-stop, e.g. while the controller was down) and could
  // not be started again: the run cannot go on in it (docs/rules.md §2.8, "A stopped sandbox").
  sandbox_not_restartable: {
    outcome: "terminal_failure",
    owner: "board",
    canRetry: true,
    message: "The run's sandbox stopped and could not be started again, so the run ended there.",
    nextAction: "The sandbox could not be started again: check the provider, then Retry",
  },
  // The runner process died (its sandbox stopped, or it was killed) and its own state does not
  // prove the session can go on from where it was: a turn was in flight, or the state is not
  // this run's (resume_dead_runner, docs/rules.md §2.8, "A dead runner").
  runner_not_resumable: {
    outcome: "terminal_failure",
    owner: "board",
    canRetry: true,
    message: "The agent's runner stopped in a state it cannot safely go on from, so the run ended there.",
    nextAction: "The runner could not be resumed safely: read the run's proof, then Retry",
  },
  // Recovery itself kept failing (provider unreachable, sandbox stopped, a file unreadable):
  // after a bounded number of attempts the run stops instead of being reclaimed for ever (§2.8).
  native_recovery_attempts_exhausted: {
    outcome: "terminal_failure",
    owner: "board",
    canRetry: true,
    message: "After a server restart, Runwarden tried several times to pick the run up again and could not reach what it needed, so it stopped the run.",
    nextAction: "Recovery failed several times: check that the sandbox provider is reachable, then Retry",
  },
  native_restart_recovery_blocked: {
    outcome: "terminal_failure",
    owner: "board",
    canRetry: true,
    message: "After a server restart, Runwarden could not prove it was safe to restart the run's setup, so it stopped the run.",
    nextAction: "The run could not safely restart after a server restart: Retry to start it again",
  },
  ambiguous_remote_recovery_evidence: {
    // An ownership hold: retrying before someone checks could run the work twice.
    outcome: "terminal_failure",
    owner: "board",
    canRetry: false,
    message:
      "After a server restart, Runwarden could not tell for sure whether the run's sandbox is still in use, so it is leaving it untouched.",
    nextAction: "It is unclear who is using the run's sandbox: ask an operator to check the run before it can be retried",
  },
} as const satisfies Record<string, CatalogueRow>;

export type FailureCode = keyof typeof FAILURE_CATALOGUE;

export const FAILURE_CODES = Object.keys(FAILURE_CATALOGUE) as [FailureCode, ...FailureCode[]];

/** What a reader sees for any stored code (`describeFailure`; its schema: `failureDescriptionSchema`). */
export interface FailureDescription extends CatalogueRow {
  code: string;
  /** False for a code this catalogue does not know (an older or newer release wrote it). */
  known: boolean;
}

export function isFailureCode(code: string): code is FailureCode {
  return Object.hasOwn(FAILURE_CATALOGUE, code);
}

/** The catalogue row of a code the engine emits. */
export function failureEntry(code: FailureCode): FailureDescription & { code: FailureCode } {
  return { code, known: true, ...FAILURE_CATALOGUE[code] };
}

/**
 * What a board user reads for any stored code. An unknown code fails closed: no Retry is
 * offered until an operator has looked, and the raw code is kept for them.
 */
export function describeFailure(code: string | null | undefined): FailureDescription | null {
  if (code == null) return null;
  const trimmed = code.trim();
  if (isFailureCode(trimmed)) return failureEntry(trimmed);
  return {
    code,
    known: false,
    outcome: "terminal_failure",
    owner: "board",
    canRetry: false,
    message: `The run stopped with a failure Runwarden does not recognise (${trimmed || "no code"}).`,
    nextAction: "The failure is not recognised: ask an operator to look at the run",
  };
}

/** The catalogue-derived fields every verdict with a failure code carries. */
export function failureFields(code: FailureCode | null): {
  outcome: OutcomeClass | null;
  owner: Owner | null;
  canRetry: boolean;
  message: string | null;
  nextAction: string | null;
} {
  if (code === null) return { outcome: null, owner: null, canRetry: false, message: null, nextAction: null };
  const row = FAILURE_CATALOGUE[code];
  return { outcome: row.outcome, owner: row.owner, canRetry: row.canRetry, message: row.message, nextAction: row.nextAction };
}
