import { describe, expect, it } from "vitest";
import { actualRoute, checkForecastRun, judgeForecast, type PredictedRoute, type RestartProof, type RestartRecord } from "./forecast-check";

const restart = (...proofs: RestartProof[]): RestartRecord => ({ at: "2026-12-06T10:00:00.000Z", bootId: "boot-b", proofs });
const p = (kind: string, verdict: string, code: string | null = null): RestartProof => ({ kind, verdict, code });
const running = { status: "running", failureCode: null, canRetry: null };
const failed = { status: "failed", failureCode: "native_continuation_requires_reconciliation", canRetry: true };
const reattach: PredictedRoute = { prediction: "continues", path: "reattach", code: null, canRetry: null };
const warmReattach = restart(p("process_exit", "exited"), p("recovery_route", "recover_session"), p("stopped_sandbox", "proceed"), p("lease_binding", "admitted"), p("runner_resume", "reattach"));
const refusedBinding = restart(p("recovery_route", "recover_session"), p("stopped_sandbox", "proceed"), p("lease_binding", "refused", "native_runner_staged_attachment_recovery_unproven"));

describe("actualRoute: the restart's route from its proofs", () => {
  it("reads each continuation path", () => {
    expect(actualRoute([warmReattach], running)?.route).toMatchObject({ prediction: "continues", path: "reattach", decidedBy: "runner_resume:reattach" });
    expect(actualRoute([restart(p("recovery_route", "recover_session"), p("lease_binding", "admitted"), p("runner_resume", "resume"))], running)?.route.path).toBe("resume");
    expect(actualRoute([restart(p("recovery_route", "read_runner"), p("recovery_route", "recover_bootstrap"), p("bootstrap_restart", "restart_bootstrap"))], running)?.route.path).toBe("bootstrap_restart");
    expect(actualRoute([restart(p("recovery_route", "read_runner"), p("recovery_route", "restart_bootstrap_fresh"))], running)?.route.path).toBe("bootstrap_fresh");
    expect(actualRoute([restart(p("recovery_route", "restart_acquire"))], running)?.route.path).toBe("acquire_again");
    expect(actualRoute([restart(p("recovery_route", "next_turn_sandbox"))], running)?.route.path).toBe("next_turn_sandbox");
    expect(actualRoute([restart(p("recovery_route", "finish"))], running)?.route.path).toBe("finish");
    expect(actualRoute([restart(p("recovery_route", "recover_session"), p("recovery_attempt", "wait"))], running)?.route.path).toBe("wait_for_provider");
    expect(actualRoute([restart(p("recovery_route", "recover_session"), p("stopped_sandbox", "start_sandbox"))], running)?.route.path).toBe("start_sandbox");
    expect(actualRoute([restart(p("recovery_route", "recover_session"), p("stopped_sandbox", "wait"))], running)?.route.path).toBe("wait_for_sandbox");
  });

  it("an end carries the deciding proof's code and the code the run rests in", () => {
    expect(actualRoute([refusedBinding], failed)?.route).toEqual({
      prediction: "ends",
      path: null,
      code: "native_runner_staged_attachment_recovery_unproven",
      restingCode: "native_continuation_requires_reconciliation",
      canRetry: true,
      decidedBy: "lease_binding:refused",
    });
    expect(actualRoute([restart(p("recovery_route", "recover_session"), p("stopped_sandbox", "end_run", "sandbox_not_restartable"))], failed)?.route.code).toBe("sandbox_not_restartable");
  });

  it("a restart still deciding says nothing; one that was let go to try again hands over to the next", () => {
    expect(actualRoute([restart(p("recovery_route", "recover_session"), p("lease_binding", "admitted"))], running)).toBeNull();
    expect(actualRoute([], running)).toBeNull();
    const tried = restart(p("recovery_route", "recover_session"), p("recovery_attempt", "try_again"));
    expect(actualRoute([tried], running)).toBeNull();
    expect(actualRoute([tried, warmReattach], running)?.route.path).toBe("reattach");
  });

  it("a failure of the execution after the reattach does not change how the restart went on", () => {
    const later = restart(...warmReattach.proofs, p("recovery_attempt", "give_up", "native_recovery_attempts_exhausted"));
    expect(actualRoute([later], failed)?.route).toMatchObject({ prediction: "continues", path: "reattach" });
  });
});

describe("judgeForecast", () => {
  const continued = { prediction: "continues" as const, path: "reattach", code: null, restingCode: null, canRetry: null, decidedBy: "runner_resume:reattach" };
  const ended = { prediction: "ends" as const, path: null, code: "native_runner_staged_attachment_recovery_unproven", restingCode: "native_continuation_requires_reconciliation", canRetry: true, decidedBy: "lease_binding:refused" };

  it("held when the class and the path match", () => {
    expect(judgeForecast(reattach, continued)).toEqual({ outcome: "held", differences: [] });
  });
  it("held when an end's code is the refusal code or the resting code", () => {
    expect(judgeForecast({ prediction: "ends", path: null, code: "native_runner_staged_attachment_recovery_unproven", canRetry: true }, ended).outcome).toBe("held");
    expect(judgeForecast({ prediction: "ends", path: null, code: "native_continuation_requires_reconciliation", canRetry: true }, ended).outcome).toBe("held");
  });
  it("differed on the class", () => {
    expect(judgeForecast(reattach, ended)).toEqual({ outcome: "differed", differences: [{ field: "prediction", forecast: "continues", actual: "ends" }] });
    expect(judgeForecast({ prediction: "operator", path: null, code: null, canRetry: null }, continued).differences[0]).toMatchObject({ field: "prediction", forecast: "operator" });
  });
  it("wait_for_provider holds whichever way the run goes on once the provider answers, never an end", () => {
    const waits = { ...reattach, path: "wait_for_provider" };
    expect(judgeForecast(waits, { ...continued, path: "resume" }).outcome).toBe("held");
    expect(judgeForecast(waits, ended).outcome).toBe("differed");
  });
  it("differed on the path", () => {
    expect(judgeForecast({ ...reattach, path: "resume" }, continued)).toEqual({ outcome: "differed", differences: [{ field: "path", forecast: "resume", actual: "reattach" }] });
  });
  it("differed on the code and on Retry", () => {
    expect(judgeForecast({ prediction: "ends", path: null, code: "native_remote_recovery_lease_mismatch", canRetry: false }, ended)).toEqual({
      outcome: "differed",
      differences: [
        { field: "code", forecast: "native_remote_recovery_lease_mismatch", actual: "native_runner_staged_attachment_recovery_unproven" },
        { field: "canRetry", forecast: false, actual: true },
      ],
    });
  });
});

describe("checkForecastRun", () => {
  it("held after the restart, with the restart named", () => {
    expect(checkForecastRun(reattach, [warmReattach], running)).toMatchObject({ outcome: "held", restart: { bootId: "boot-b" }, actual: { path: "reattach" } });
  });
  it("differed when the world changed before the restart", () => {
    expect(checkForecastRun(reattach, [refusedBinding], failed)).toMatchObject({ outcome: "differed", differences: [{ field: "prediction" }] });
  });
  it("a run that ended without a restart is not_restarted; one still live waits", () => {
    expect(checkForecastRun(reattach, [], { status: "succeeded", failureCode: null, canRetry: null })).toEqual({ outcome: "not_restarted", actual: null, differences: [], restart: null });
    expect(checkForecastRun(reattach, [], running)).toBeNull();
  });
});
