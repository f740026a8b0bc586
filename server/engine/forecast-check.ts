import { z } from "zod";
import { isLiveRunStatus } from "./run-status";

/**
 * Checking a stored restart forecast against what the next real restart did (docs/rules.md
 * §2.12): the restart's route is read from the proofs the restarted controller stored
 * (`actualRoute`), and compared with the prediction (`judgeForecast`). `checkForecastRun`
 * puts both together with the rule for a run that was never restarted. Pure: the shell
 * (`server/forecasts/check.ts`) gathers the proofs and stores the answer.
 */

export const FORECAST_CLASSES = ["continues", "ends", "operator"] as const;
export type ForecastClass = (typeof FORECAST_CLASSES)[number];

/** held: the restart did what was forecast; differed: it did not (a defect, shown); not_restarted: the run ended with no restart. */
export const FORECAST_OUTCOMES = ["held", "differed", "not_restarted"] as const;
export type ForecastOutcome = (typeof FORECAST_OUTCOMES)[number];

export const forecastDifferenceSchema = z.object({
  field: z.enum(["prediction", "path", "code", "canRetry"]),
  forecast: z.union([z.string(), z.boolean(), z.null()]),
  actual: z.union([z.string(), z.boolean(), z.null()]),
});
export type ForecastDifference = z.infer<typeof forecastDifferenceSchema>;

/** What a restart did to a run, as read from its proofs (stored on `forecast_runs.actual`). */
export const actualRouteSchema = z.object({
  prediction: z.enum(FORECAST_CLASSES),
  /** How it went on (the forecast's path names), when it did. */
  path: z.string().nullable(),
  /** The deciding proof's code when it ended (a refusal code, e.g. native_runner_staged_attachment_recovery_unproven). */
  code: z.string().nullable(),
  /** The code the run rests in (its failure code), when it ended. */
  restingCode: z.string().nullable(),
  canRetry: z.boolean().nullable(),
  /** The proof that decided: kind and verdict. */
  decidedBy: z.string(),
});
export type ActualRoute = z.infer<typeof actualRouteSchema>;

export const forecastCheckSchema = z.object({
  outcome: z.enum(FORECAST_OUTCOMES),
  actual: actualRouteSchema.nullable(),
  differences: z.array(forecastDifferenceSchema),
  /** The restart that was judged: when it started and which controller ran it. */
  restart: z.object({ at: z.string(), bootId: z.string().nullable() }).nullable(),
});
export type ForecastCheck = z.infer<typeof forecastCheckSchema>;

/** One proof a restarted controller stored, in the order it stored them. */
export interface RestartProof {
  kind: string;
  verdict: string;
  code: string | null;
}

/** One restart of the run: its `recovery_started` event and the proofs stored after it, up to the next one. */
export interface RestartRecord {
  at: string;
  bootId: string | null;
  proofs: RestartProof[];
}

export interface CheckedRun {
  status: string;
  failureCode: string | null;
  canRetry: boolean | null;
}

export interface PredictedRoute {
  prediction: ForecastClass;
  path: string | null;
  code: string | null;
  canRetry: boolean | null;
}

type Step = { kind: "decided"; route: Omit<ActualRoute, "restingCode" | "canRetry"> } | { kind: "next" } | { kind: "open" };

/**
 * The route one restart took, from its proofs in order: the first decisive one wins (a
 * failure of the execution after a reattach does not change how the restart went on).
 * `next`: the recovery attempt threw and was let go to try again (§2.8), so the following
 * restart decides; `open`: the restart has not decided yet.
 */
function restartStep(proofs: readonly RestartProof[]): Step {
  const continues = (path: string, p: RestartProof): Step => ({ kind: "decided", route: { prediction: "continues", path, code: null, decidedBy: `${p.kind}:${p.verdict}` } });
  const ends = (p: RestartProof): Step => ({ kind: "decided", route: { prediction: "ends", path: null, code: p.code, decidedBy: `${p.kind}:${p.verdict}` } });
  for (const p of proofs) {
    switch (p.kind) {
      case "recovery_route":
        if (p.verdict === "restart_acquire") return continues("acquire_again", p);
        if (p.verdict === "finish") return continues("finish", p);
        if (p.verdict === "next_turn_sandbox") return continues("next_turn_sandbox", p);
        if (p.verdict === "restart_bootstrap_fresh") return continues("bootstrap_fresh", p);
        if (p.verdict === "refused") return ends(p);
        break; // read_runner, recover_session, recover_bootstrap: a later proof decides
      case "stopped_sandbox":
        if (p.verdict === "end_run") return ends(p);
        if (p.verdict === "start_sandbox") return continues("start_sandbox", p);
        if (p.verdict === "wait") return continues("wait_for_sandbox", p);
        break;
      case "lease_binding":
        if (p.verdict === "refused") return ends(p);
        break;
      case "bootstrap_restart":
        return p.verdict === "restart_bootstrap" ? continues("bootstrap_restart", p) : ends(p);
      case "runner_resume":
        if (p.verdict === "reattach") return continues("reattach", p);
        if (p.verdict === "resume") return continues("resume", p);
        return ends(p);
      case "recovery_attempt":
        if (p.verdict === "wait") return continues("wait_for_provider", p);
        if (p.verdict === "try_again") return { kind: "next" };
        return ends(p);
      default:
        break; // process_exit, turn_result, …: not part of the route
    }
  }
  return { kind: "open" };
}

/** The route the restarts took (the first that decided), or null while none has decided. */
export function actualRoute(restarts: readonly RestartRecord[], run: CheckedRun): { route: ActualRoute; restart: RestartRecord } | null {
  for (const r of restarts) {
    const step = restartStep(r.proofs);
    if (step.kind === "open") return null;
    if (step.kind === "next") continue;
    const ended = step.route.prediction === "ends";
    const failed = ended && !isLiveRunStatus(run.status);
    return {
      route: { ...step.route, restingCode: failed ? run.failureCode : null, canRetry: failed ? run.canRetry : null },
      restart: r,
    };
  }
  return null;
}

/** Continuation paths that say only that the run waits and then goes on: any continuation holds them. */
const OPEN_ENDED_PATHS: readonly string[] = ["wait_for_provider"];

/** Held, or differed with every difference: class, path (when it continues), code and Retry (when it ends). */
export function judgeForecast(predicted: PredictedRoute, actual: ActualRoute): { outcome: "held" | "differed"; differences: ForecastDifference[] } {
  const differences: ForecastDifference[] = [];
  if (predicted.prediction !== actual.prediction) {
    differences.push({ field: "prediction", forecast: predicted.prediction, actual: actual.prediction });
  } else if (actual.prediction === "continues") {
    // "Waits for the provider, then goes on by the usual proofs": the path after the wait is not
    // forecast (a restart during the outage claims nothing until the provider answers, §2.8).
    const openEnded = predicted.path !== null && OPEN_ENDED_PATHS.includes(predicted.path);
    if (predicted.path !== null && !openEnded && predicted.path !== actual.path) differences.push({ field: "path", forecast: predicted.path, actual: actual.path });
  } else if (actual.prediction === "ends") {
    // A forecast may name the refusal code (on the proof) or the code the run rests in: either is the run's end.
    const codes = [actual.code, actual.restingCode].filter((c): c is string => c !== null);
    if (predicted.code !== null && codes.length > 0 && !codes.includes(predicted.code)) {
      differences.push({ field: "code", forecast: predicted.code, actual: actual.code ?? actual.restingCode });
    }
    if (predicted.canRetry !== null && actual.canRetry !== null && predicted.canRetry !== actual.canRetry) {
      differences.push({ field: "canRetry", forecast: predicted.canRetry, actual: actual.canRetry });
    }
  }
  return { outcome: differences.length ? "differed" : "held", differences };
}

/**
 * One forecast run checked: held or differed after a restart that decided; not_restarted
 * when the run ended with no restart after the forecast (it simply finished, or was
 * cancelled); null while nothing can be said yet (no restart, or one still deciding).
 */
export function checkForecastRun(predicted: PredictedRoute, restarts: readonly RestartRecord[], run: CheckedRun): ForecastCheck | null {
  const found = actualRoute(restarts, run);
  if (found) {
    const judged = judgeForecast(predicted, found.route);
    return { ...judged, actual: found.route, restart: { at: found.restart.at, bootId: found.restart.bootId } };
  }
  if (restarts.length === 0 && !isLiveRunStatus(run.status)) return { outcome: "not_restarted", actual: null, differences: [], restart: null };
  return null;
}
