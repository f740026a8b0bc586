import type { Check } from "./verdicts";

/**
 * How a person reads a proof's checks. Two kinds of proof record checks differently:
 *
 * - A **gate** (lease_binding, bootstrap_restart, turn_result) admits only when every check
 *   holds; a check that does not hold is a reason for the refusal.
 * - A **judgement** (process_exit, creation_intent, teardown_fence, startup_failure,
 *   recovery_attempt, recovery_route) asks its questions in order and stops at the one
 *   whose answer decides. "No" is an answer,
 *   not a failure: process_exit's `pid_live` answered "no" is exactly what proves an exit.
 *
 * Presentation only (no I/O); the checks themselves stay as the engine recorded them.
 */
export const JUDGEMENT_KINDS = ["process_exit", "creation_intent", "teardown_fence", "startup_failure", "recovery_attempt", "recovery_route"] as const;

export type CheckReading =
  /** A judgement's question before the deciding one: its answer sent it on. */
  | { kind: "went_on" }
  /** The judgement's deciding question: its answer gave the verdict. */
  | { kind: "decided"; verdict: string; reason: string | null }
  /** A gate's condition that held. */
  | { kind: "held" }
  /** A gate's condition that did not hold: a reason the gate refused. */
  | { kind: "refused" };

export function isJudgement(kind: string): boolean {
  return (JUDGEMENT_KINDS as readonly string[]).includes(kind);
}

/** The index of the check that decided a judgement (the last asked; in a group of matches, the first that failed). */
function decidingIndex(kind: string, verdict: string, checks: readonly Pick<Check, "name" | "ok">[]): number {
  if (kind === "creation_intent" && verdict === "manual_reconciliation") {
    const i = checks.findIndex((c) => c.name.endsWith("_matches") && !c.ok);
    if (i >= 0) return i;
  }
  return checks.length - 1;
}

export function readChecks(proof: { kind: string; verdict: string; reason: string | null }, checks: readonly Pick<Check, "name" | "ok">[]): CheckReading[] {
  if (!isJudgement(proof.kind)) return checks.map((c) => (c.ok ? { kind: "held" } : { kind: "refused" }));
  const deciding = decidingIndex(proof.kind, proof.verdict, checks);
  return checks.map((_, i) => (i === deciding ? { kind: "decided", verdict: proof.verdict, reason: proof.reason } : { kind: "went_on" }));
}
