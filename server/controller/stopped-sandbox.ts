import { decideStoppedSandbox, type StoppedSandboxDecision, type StoppedSandboxEvidence } from "../engine/stopped-sandbox";
import { ProviderError } from "../providers/errors";
import { waitsForProvider } from "./outage";
import type { SandboxProvider } from "../providers/types";

/**
 * The shell around `decideStoppedSandbox` (docs/rules.md §2.8, "A stopped sandbox"): gathers the sandbox's state, asks the
 * engine, and carries out its verdict — `start_sandbox` starts the sandbox again through
 * the provider (`POST /sandbox/{id}/start`, waiting for `started`). Recovery calls it before
 * it reads the runner state of a lease's sandbox, stores `decision` (with its checks) as a
 * proof, counts `attempted` towards `startAttempts`, and acts on the final verdict:
 * `proceed` → recover as usual (the runner process did not survive the stop: the engine's
 * `runner_resume` or `bootstrap_restart` proof decides what becomes of it); `wait` → look
 * again on a later tick; `end_run` → end the run with `decision.code` (terminal, Retry).
 */

export interface BringUpResult {
  evidence: StoppedSandboxEvidence;
  decision: StoppedSandboxDecision;
  /** A start was attempted (count it, success or not). */
  attempted: boolean;
  restarted: boolean;
  /** What the provider said when the start failed. */
  error: string | null;
}

export async function bringSandboxUp(
  provider: Pick<SandboxProvider, "getById" | "ensureStarted">,
  sandbox: { id: string },
  budget: { startAttempts: number; maxStartAttempts: number },
): Promise<BringUpResult> {
  const observe = async (startAttempts: number): Promise<StoppedSandboxEvidence> => {
    // By id: the lease names the sandbox by its provider id; a name can be reused after a delete.
    const view = await provider.getById(sandbox.id);
    return { kind: "stopped_sandbox", sandboxState: view?.state ?? null, desiredState: view?.desiredState ?? null, startAttempts, maxStartAttempts: budget.maxStartAttempts };
  };
  const evidence = await observe(budget.startAttempts);
  const decision = decideStoppedSandbox(evidence);
  if (decision.verdict !== "start_sandbox") return { evidence, decision, attempted: false, restarted: false, error: null };
  let error: string | null = null;
  let restarted = false;
  try {
    restarted = (await provider.ensureStarted(sandbox.id)).outcome === "restarted";
  } catch (err) {
    // An unavailable provider is not a start attempt of this sandbox's (§2.8): judged as an outage.
    if (waitsForProvider(err)) throw err;
    error = ProviderError.is(err) ? err.message : String(err);
  }
  // Judged again on what the provider shows now, with this attempt counted.
  const after = await observe(budget.startAttempts + 1);
  return { evidence: after, decision: decideStoppedSandbox(after), attempted: true, restarted, error };
}
