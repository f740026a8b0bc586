import { z } from "zod";
import { OWNERS } from "../engine/catalogue";
import { LIVE_RUN_STATUSES } from "../engine/run-status";
import { checkSchema } from "../engine/verdicts";

/**
 * The restart forecast (docs/rules.md §2.12): what a controller restarted NOW would do to each
 * run that is not terminal, judged by the same engine functions recovery calls, on evidence
 * gathered without claiming, writing or changing any runner. One shape for the CLI's JSON,
 * the stored forecast and the console (pure: the browser may import it).
 */

export const FORECAST_PREDICTIONS = ["continues", "ends", "operator"] as const;
export type ForecastPrediction = (typeof FORECAST_PREDICTIONS)[number];

/**
 * How a run that continues goes on, named after what recovery (`engine/recovery-walk.ts`)
 * would do:
 *   claim_queued       queued: any controller's tick claims it (no recovery involved)
 *   acquire_again      `restart_acquire`: nothing reached a runner, the bootstrap starts again from acquire
 *   finish             `finish`: the run was finishing; it is finished
 *   next_turn_sandbox  `next_turn_sandbox`: between two per-turn sandboxes, the checkpoint carries the session on
 *   bootstrap_fresh    `restart_bootstrap_fresh`: no runner was ever started on the sandbox; bootstrap again on it
 *   bootstrap_restart  `recover_bootstrap` admitted by `bootstrap_restart` (§2.2): the bootstrap restarts on the same sandbox
 *   reattach           `recover_session` admitted by `lease_binding` (§2.1), the runner alive (`runner_resume` reattach)
 *   resume             `recover_session` admitted, the runner dead and resumable on its own state (`runner_resume` resume)
 *   start_sandbox      the run's sandbox is stopped and the engine would start it again (`stopped_sandbox`
 *                      start_sandbox); its runner can only be read after that start, so what follows is not
 *                      forecast (the runner_resume / bootstrap_restart proofs decide then)
 *   wait_for_sandbox   the sandbox is in a transition: the attempt is counted and recovery looks again after
 *                      its back-off (`recovery_attempt` try_again with attempts left)
 *   wait_for_provider  the provider is unavailable (§2.8): the run waits, uncounted, and goes on when it answers
 */
export const FORECAST_PATHS = [
  "claim_queued",
  "acquire_again",
  "finish",
  "next_turn_sandbox",
  "bootstrap_fresh",
  "bootstrap_restart",
  "reattach",
  "resume",
  "start_sandbox",
  "wait_for_sandbox",
  "wait_for_provider",
] as const;
export type ForecastPath = (typeof FORECAST_PATHS)[number];

/** One engine verdict the forecast reached, in the order recovery would reach it. */
export const forecastProofSchema = z.object({
  kind: z.string(),
  verdict: z.string(),
  code: z.string().nullable(),
  checks: z.array(checkSchema),
});
export type ForecastProof = z.infer<typeof forecastProofSchema>;

export const runForecastSchema = z.object({
  runId: z.string(),
  companyId: z.string(),
  taskId: z.string(),
  status: z.enum(LIVE_RUN_STATUSES),
  phase: z.string().nullable(),
  /** The run as the forecast read it: the next restart claims it past this epoch. */
  executorBootId: z.string().nullable(),
  executorEpoch: z.number().int(),
  prediction: z.enum(FORECAST_PREDICTIONS),
  /** How it continues (prediction `continues`), else null. */
  path: z.enum(FORECAST_PATHS).nullable(),
  /** The deciding verdict's code (`ends`: e.g. a lease_binding refusal's), or what leaves it to an operator; null when it continues. */
  code: z.string().nullable(),
  /**
   * The failure code the run would rest in (the run row's `failure_code` after the restart):
   * the engine's `restingCode` of the deciding verdict. It differs from `code` for a
   * lease_binding refusal, which rests in `native_continuation_requires_reconciliation` (§2.1).
   */
  restsIn: z.string().nullable(),
  /** Who owns the ended run (the resting failure's owner); null unless it ends. */
  owner: z.enum(OWNERS).nullable(),
  /** Whether the ended run would offer Retry; null unless it ends. */
  canRetry: z.boolean().nullable(),
  /** The plain sentence. */
  reason: z.string(),
  /** The engine's verdicts in order, each with its checks. */
  proofs: z.array(forecastProofSchema),
  /** The evidence bundles given to those verdicts, in the same order (as the engine took them). */
  evidence: z.array(z.unknown()),
  /** What the forecast could not read (a provider or runner read that failed), else null. */
  readError: z.string().nullable(),
});
export type RunForecast = z.infer<typeof runForecastSchema>;

export const forecastCountsSchema = z.object({
  total: z.number().int().nonnegative(),
  continues: z.number().int().nonnegative(),
  ends: z.number().int().nonnegative(),
  operator: z.number().int().nonnegative(),
});
export type ForecastCounts = z.infer<typeof forecastCountsSchema>;

export const forecastSchema = z.object({
  takenAt: z.string(),
  durationMs: z.number().int().nonnegative(),
  runs: z.array(runForecastSchema),
  counts: forecastCountsSchema,
});
export type Forecast = z.infer<typeof forecastSchema>;

export function countForecast(runs: ReadonlyArray<Pick<RunForecast, "prediction">>): ForecastCounts {
  const counts: ForecastCounts = { total: runs.length, continues: 0, ends: 0, operator: 0 };
  for (const r of runs) counts[r.prediction] += 1;
  return counts;
}
