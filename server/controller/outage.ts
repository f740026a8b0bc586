import { alertBreakerChange } from "../alerts/events";
import { isProviderUnavailable, type RecoveryAttemptEvidence } from "../engine";
import { failureOf, ProviderBreaker, type BreakerChange, type BreakerReading } from "../providers/breaker";
import type { ControllerContext } from "./context";
import type { RunFence } from "./fence";

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

/** The recovery_attempt evidence's `failure` and `provider` for an error: the probe's answer when the error says the provider is unavailable. */
export async function outageEvidence(ctx: ControllerContext, err: unknown): Promise<Pick<RecoveryAttemptEvidence, "failure" | "provider">> {
  const failure = failureOf(err);
  if (!isProviderUnavailable(failure) || !ctx.breaker) return { failure };
  const reading = await ctx.breaker.confirm();
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

/** Logs a change of the breaker and records it on this controller's row (what the dashboard and /api/metrics read). */
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
  // The row and the outage's alert in one transaction: the alert reports exactly this change.
  await ctx.db.$transaction(async (tx) => {
    await tx.controllerProcess.update({
      where: { bootId: ctx.identity.bootId },
      data: {
        providerUnavailableSince: reading.unavailableSince ? new Date(reading.unavailableSince) : null,
        providerLastError: reading.open ? reading.lastError : null,
        providerNextProbeAt: reading.nextProbeAt ? new Date(reading.nextProbeAt) : null,
      },
    });
    await alertBreakerChange(tx, {
      instanceId: ctx.config.instanceId,
      bootId: ctx.identity.bootId,
      provider: ctx.providerTarget,
      change: change.to,
      since: change.since,
      at: change.to === "closed" ? change.at : new Date().toISOString(),
      lastError: change.to === "closed" ? null : change.error,
      liveWindowMs: ctx.config.executorTimeoutMs,
    });
  });
}

/** The run goes on after waiting for its provider: no longer counted among the waiting. */
export async function clearProviderWait(ctx: ControllerContext, run: RunFence): Promise<void> {
  await ctx.db.run.updateMany({ where: { id: run.id, executorBootId: ctx.identity.bootId, executorEpoch: run.executorEpoch }, data: { providerWaitSince: null } });
}
