import { ProviderError } from "../providers/errors";
import { waitsForProvider } from "./outage";
import type { SandboxProvider } from "../providers/types";

/**
 * The readings behind `judgeStoppedSandbox` (docs/rules.md §2.8, "A stopped sandbox"), as the
 * recovery walk asks for them (engine/recovery-walk.ts): the provider's view of the sandbox
 * (`sandbox`), and — only when the engine said `start_sandbox`, its proof stored first — a start
 * through the provider (`POST /sandbox/{id}/start`, waiting for `started`) and the view again,
 * this attempt counted (`sandbox_start`). The engine judges both; `proceed` → recover as usual
 * (the runner process did not survive the stop: `runner_resume` or `bootstrap_restart` decides
 * what becomes of it); `wait` → look again after a back-off; `end_run` → the run ends.
 */

export interface SandboxReading {
  ok: true;
  state: string | null;
  desiredState: string | null;
  startAttempts: number;
}

type View = Pick<SandboxProvider, "getById">;

export async function readSandbox(provider: View, sandboxId: string, startAttempts: number): Promise<SandboxReading> {
  // By id: the lease names the sandbox by its provider id; a name can be reused after a delete.
  const view = await provider.getById(sandboxId);
  return { ok: true, state: view?.state ?? null, desiredState: view?.desiredState ?? null, startAttempts };
}

/** One start attempt (counted whether it took or not), then the provider's view again. */
export async function startSandbox(
  provider: Pick<SandboxProvider, "getById" | "ensureStarted">,
  sandboxId: string,
  startAttempts: number,
): Promise<SandboxReading & { restarted: boolean; error: string | null }> {
  let error: string | null = null;
  let restarted = false;
  try {
    restarted = (await provider.ensureStarted(sandboxId)).outcome === "restarted";
  } catch (err) {
    // An unavailable provider is not a start attempt of this sandbox's (§2.8): judged as an outage.
    if (waitsForProvider(err)) throw err;
    error = ProviderError.is(err) ? err.message : String(err);
  }
  return { ...(await readSandbox(provider, sandboxId, startAttempts + 1)), restarted, error };
}
