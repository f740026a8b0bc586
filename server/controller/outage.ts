import { isProviderUnavailable, type RecoveryAttemptEvidence } from "../engine";
import { failureOf, ProviderBreaker, type BreakerChange, type BreakerReading } from "../providers/breaker";
import type { ControllerContext } from "./context";
import type { RunFence } from "./fence";
import { judgeOutage } from "./outage-alerts";

/**
 * An outage is not the run's failure (docs/rules.md §2.8). The shell's part: route a provider
 * unavailability to the engine's `recovery_attempt` judgement instead of a startup failure,
 * gather the breaker's reading as its evidence, and make the breaker's state visible (log,
 * the controller's row for the dashboard and the metrics).
 */

/** An error the engine calls a provider unavailability: it goes to the recovery_attempt judgement, never to a startup failure's count. */
export function waitsForProvider(err: unknown): boolean {
  return isProviderUnavailable(failureOf(err));
}

/**
 * The recovery_attempt evidence's `failure` (with where the call went: the API or a sandbox's
 * toolbox) and `provider` for an error: when the error says unavailable, the answer of a probe
 * of the provider's API after it — the breaker's first probe, or for a toolbox's error (which
 * opens nothing) a probe made now.
 */
export async function outageEvidence(ctx: ControllerContext, err: unknown): Promise<Pick<RecoveryAttemptEvidence, "failure" | "provider">> {
  const failure = failureOf(err);
  if (!isProviderUnavailable(failure) || !ctx.breaker) return { failure };
  const reading = await ctx.breaker.confirm(err);
  return {
    failure,
    provider: { reachable: !reading.open, unavailableSince: reading.unavailableSince, lastError: reading.lastError, nextProbeAt: reading.nextProbeAt },
  };
}

/** The controller's breaker: probes by an exact name that never exists (an answer of "no such sandbox" is an answer). */
export function createBreaker(ctx: Omit<ControllerContext, "breaker" | "drain">, onChange: (change: BreakerChange, reading: BreakerReading) => void): ProviderBreaker {
  const probeName = `${ctx.config.sandboxPrefix}-breaker-probe`;
  return new ProviderBreaker({
    probe: () => ctx.provider.getByName(probeName),
    baseMs: ctx.config.breakerProbeMs,
    capMs: ctx.config.breakerProbeCapMs,
    onChange,
  });
}

/**
 * Logs a change of the breaker, records it on this controller's row (what the dashboard and
 * /api/metrics read) and judges the outage's alerts in the same transaction (`judgeOutage`).
 * The controller calls it for one change at a time, in the order they happened.
 */
export async function recordBreakerChange(ctx: ControllerContext, change: BreakerChange, reading: BreakerReading): Promise<void> {
  switch (change.to) {
    case "open":
      ctx.log.warn({ breaker: "open", since: change.since, error: change.error }, "provider unavailable: runs wait for it");
      break;
    case "still_open":
      ctx.log.warn({ breaker: "open", since: change.since, probes: change.probes, nextProbeAt: reading.nextProbeAt, error: change.error }, "provider still unavailable");
      break;
    case "closed":
      ctx.log.info(
        { breaker: "closed", since: change.since, probes: change.probes, by: change.by, downMs: Date.parse(change.at) - Date.parse(change.since) },
        "provider back: runs go on",
      );
      break;
  }
  await judgeOutage(ctx, reading);
}

/**
 * The run goes on after waiting for its provider: no longer counted among the waiting. Its 429
 * waits are kept until it finishes a turn (`execute.ts`): a recovery that goes on only to meet
 * the same 429 again must not start the bound afresh (§2.8).
 */
export async function clearProviderWait(ctx: ControllerContext, run: RunFence): Promise<void> {
  await ctx.db.run.updateMany({ where: { id: run.id, executorBootId: ctx.identity.bootId, executorEpoch: run.executorEpoch }, data: { providerWaitSince: null } });
}
