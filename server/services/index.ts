import type { z } from "zod";
import { writeAudit, type Actor } from "../audit/write";
import type { CompanyScope } from "../shared/roles";
import type { ControllerContext } from "../controller/context";
import { serviceContext } from "../controller/service";
import { sweepCreationIntents, sweepTeardown, type SweepSummary } from "../controller/sweeps";

/** What a sweep pass reports (the controller's answer and the tRPC output share it). */
export { sweepSummarySchema, type SweepSummary } from "../controller/sweeps";
import { teardownLease } from "../controller/teardown";
import { cancelInTransaction, cancelRun, type CancelOutcome, type CancelTaken } from "../controller/cancel";
import { takeForecast, type ForecastOptions } from "../controller/forecast";
import type { Forecast } from "../shared/forecast";

/** What one Cancel did (§2.11); the controller's answer, the tRPC output and the CLI share it. */
export { cancelOutcomeSchema, CANCEL_REASON_MAX, type CancelOutcome, type CancelTaken, type LeaseTeardown } from "../controller/cancel";
import type { Db, Prisma } from "../db/client";
import { destroyUnrecorded, type destroyUnrecordedInput, type DestroyUnrecordedOutput } from "../sandboxes/destroy-unrecorded";
import { previewReclaim, type reclaimInput, type ReclaimOutput } from "../sandboxes/dry-run";
import { executeReclaim } from "../sandboxes/reclaim";
import { observerOf, type Observer } from "./observer";

/**
 * What the dashboard (and the CLI) may ask of the provider and the controller's machinery:
 * the one door from the web to the controller. Built from a controller context it makes
 * itself (`servicesFor`), or from a given one (`servicesOf`, tests); routers hold no
 * controller context and never import the controller.
 */
export interface Services {
  instanceId: string;
  /** For the read models that judge processes or list sandboxes. */
  observer: Observer;
  /** Runs the sweeps now, in this process, for the companies in scope; audited as `sweep.run`. */
  sweepNow(scope: CompanyScope, kind: SweepKind, actor: Actor): Promise<SweepSummary[]>;
  /** Retry's one scoped cleanup attempt of the old run's leases (the sweep retries what fails). */
  tearDownRetriedLeases(leaseIds: readonly string[]): Promise<Array<{ leaseId: string; outcome: string }>>;
  previewReclaim(scope: CompanyScope, actor: Actor, input: z.infer<typeof reclaimInput>): Promise<ReclaimOutput>;
  executeReclaim(scope: CompanyScope, actor: Actor, input: z.infer<typeof reclaimInput>): Promise<ReclaimOutput>;
  destroyUnrecorded(scope: CompanyScope, actor: Actor, input: z.infer<typeof destroyUnrecordedInput>): Promise<DestroyUnrecordedOutput>;
  /**
   * Cancel (§2.11): takes the run over (epoch + 1), rests it in `cancelled` with who and why,
   * stops its runner and tears its sandboxes down; audited. A run out of scope is NOT_FOUND; an
   * ended one (cancelled included: two tabs, a bulk plan and a person) is `refused`.
   */
  cancelRun(scope: CompanyScope, actor: Actor, runId: string, options: { reason?: string; planId?: string }): Promise<CancelOutcome>;
  /**
   * The same Cancel in the caller's transaction (a bulk plan's item, §2.11): the run is
   * cancelled when `tx` commits, and `tearDown()` — called after that, outside any
   * transaction — stops its runner and tears its sandboxes down.
   */
  cancelRunIn(tx: Prisma.TransactionClient, scope: CompanyScope, actor: Actor, runId: string, options: { reason?: string; planId?: string }): Promise<CancelTaken>;
  /**
   * The restart forecast (§2.12): what a controller restarted now would do to each run that
   * is not terminal (in scope, or the given ids), judged by the engine on evidence read
   * without claiming, writing or changing any runner. Stores nothing.
   */
  takeForecast(scope: CompanyScope, options?: ForecastOptions): Promise<Forecast>;
}

export type SweepKind = "all" | "creation_intents" | "teardown";

/** The services of this process, acting under its own identity (see serviceContext). */
export function servicesFor(db: Db, instanceId: string): Services {
  return servicesOf(serviceContext(db, instanceId));
}

export function servicesOf(ctx: ControllerContext): Services {
  const { db } = ctx;
  const instanceId = ctx.config.instanceId;
  return {
    instanceId,
    observer: observerOf(ctx),
    async sweepNow(scope, kind, actor) {
      const results: SweepSummary[] = [];
      // Only the companies this person acts for are swept.
      const companies = scope.all ? undefined : scope.companies;
      if (kind !== "teardown") results.push(await sweepCreationIntents(ctx, "manual", companies));
      if (kind !== "creation_intents") results.push(await sweepTeardown(ctx, "manual", companies));
      await writeAudit(db, actor, {
        action: "sweep.run",
        targetType: "sweep",
        targetId: results.map((r) => r.passId).join(","),
        input: { kind },
        outcome: "ok",
        detail: results.map((r) => ({ kind: r.kind, judged: r.judged, verdicts: r.verdicts, reclaimed: r.reclaimed, destroyed: r.destroyed })),
      });
      return results;
    },
    async tearDownRetriedLeases(leaseIds) {
      const cleanup = [];
      for (const leaseId of leaseIds) {
        const outcome = await teardownLease(ctx, leaseId).catch((err: unknown) => ({ outcome: `error: ${String(err)}`, leaseId }));
        cleanup.push({ leaseId, outcome: outcome.outcome });
      }
      return cleanup;
    },
    previewReclaim: (scope, actor, input) => previewReclaim(db, observerOf(ctx), scope, instanceId, actor, input),
    executeReclaim: (scope, actor, input) => executeReclaim(db, ctx, scope, instanceId, actor, input),
    destroyUnrecorded: (scope, actor, input) => destroyUnrecorded(db, ctx, scope, instanceId, actor, input),
    cancelRun: (scope, actor, runId, options) => cancelRun(ctx, scope, actor, runId, options),
    cancelRunIn: (tx, scope, actor, runId, options) => cancelInTransaction(ctx, tx, scope, actor, runId, options),
    takeForecast: (scope, options) => takeForecast(ctx, scope, options),
  };
}
