import { z } from "zod";
import { at, check } from "./checks";
import { isoTimeSchema as isoTime } from "./schemas";
import { isSilent } from "./silence";
import type { Check } from "./verdicts";

/**
 * A provider outage as a state with one owner (docs/alerts.md, docs/rules.md §2.8 and
 * "Alerts"): the instance has at most one open outage; its `provider.outage_started` goes out
 * once it has lasted the minimum and a probe confirmed it, and exactly one
 * `provider.outage_ended` follows each started — sent by whichever live controller judges the
 * outage over, be it the one whose breaker closed or, when the controllers that had it open
 * stopped, crashed or went silent, the next pass of any live one. Pure: the shell
 * (`controller/outage-alerts.ts`) gathers the evidence under the outage's advisory lock, acts
 * on the verdict in the same transaction and keeps each acting verdict on the outage's row
 * (not as a proof: it acts on no run or sandbox).
 */

/** One controller as its row says, and (for the one judging) its breaker as it is now. */
export const outageControllerSchema = z.object({
  bootId: z.string(),
  /** The controller running this judgement: live whatever its row says. */
  self: z.boolean(),
  /** It recorded that it stopped (a drain, a stop). */
  stopped: z.boolean(),
  /** Its process is proven gone (same host: pid and start time, docs/rules.md §2.4). */
  exited: z.boolean(),
  /** Its last heartbeat (the database's clock). */
  lastSeenAt: isoTime,
  /** Its breaker: open since (null: closed), confirmed by a probe at, the provider's API last answered it at. */
  openSince: isoTime.nullable(),
  confirmedAt: isoTime.nullable(),
  answeredAt: isoTime.nullable(),
  lastError: z.string().nullable(),
});
export type OutageController = z.infer<typeof outageControllerSchema>;

export const outageAlertEvidenceSchema = z.object({
  /** The database's clock. */
  now: isoTime,
  /** RUNWARDEN_OUTAGE_ALERT_MIN_MS: how long an outage lasts before it is paged. */
  minDurationMs: z.number().int().nonnegative(),
  /** RUNWARDEN_EXECUTOR_TIMEOUT_MS: a controller silent this long is gone (docs/rules.md §2.10). */
  silenceMs: z.number().int().positive(),
  /** The instance's open outage, if any. */
  outage: z
    .object({
      id: z.string(),
      startedAt: isoTime,
      confirmedAt: isoTime.nullable(),
      startedAlertAt: isoTime.nullable(),
    })
    .nullable(),
  /** The judging controller and every other one not stopped and heard from lately. */
  controllers: z.array(outageControllerSchema),
});
export type OutageAlertEvidence = z.infer<typeof outageAlertEvidenceSchema>;

export type OutageAlertReason =
  /** No outage and no live breaker open. */
  | "no_outage"
  /** A live breaker is open and no outage was: one begins. */
  | "outage_opened"
  /** Open, not yet confirmed by a probe: not paged. */
  | "awaiting_confirmation"
  /** Open and confirmed, shorter than the minimum: not paged. */
  | "awaiting_min_duration"
  /** Confirmed and long enough: paged now. */
  | "outage_confirmed"
  /** Paged already; still open. */
  | "outage_paged"
  /** No live breaker is open, but no live controller has seen the provider answer since it began. */
  | "awaiting_answer"
  /** No live breaker is open and the provider answered: it is over. */
  | "provider_answered";

export interface OutageAlertVerdict {
  kind: "outage_alert";
  verdict: "none" | "open" | "hold" | "send_started" | "end";
  reason: OutageAlertReason;
  checks: Check[];
  /** open: the outage's start (the earliest live open breaker). */
  startedAt: string | null;
  /** The outage's confirmation, when known (stored when the row has none yet). */
  confirmedAt: string | null;
  /** Write `provider.outage_started` now (open or send_started). */
  sendStarted: boolean;
  /** end: write `provider.outage_ended` now — only for an outage whose started went out. */
  sendEnded: boolean;
  /** end: the controller that ended it (the one judging). */
  endedBy: string | null;
  /** end: the controllers whose breakers were still open on their rows, gone (stopped, exited, silent): the outage was theirs. */
  orphanedBy: string[];
}

/** Live: the judge itself, or not stopped, not proven exited and not silent past the window. */
export function isLiveController(c: OutageController, now: string, silenceMs: number): boolean {
  return c.self || (!c.stopped && !c.exited && !isSilent(new Date(c.lastSeenAt), new Date(now), silenceMs));
}

function earliest(times: Array<string | null>): string | null {
  const known = times.filter((t): t is string => t !== null).sort((a, b) => at(a) - at(b));
  return known[0] ?? null;
}

export function judgeOutageAlert(e: OutageAlertEvidence): OutageAlertVerdict {
  const checks: Check[] = [];
  const live = e.controllers.filter((c) => isLiveController(c, e.now, e.silenceMs));
  const liveOpen = live.filter((c) => c.openSince !== null);
  const goneOpen = e.controllers.filter((c) => c.openSince !== null && !isLiveController(c, e.now, e.silenceMs)).map((c) => c.bootId);
  checks.push(check("live_breaker_open", liveOpen.length > 0, "a live controller's breaker open", liveOpen.map((c) => c.bootId).join(",") || "none"));
  const none = (reason: OutageAlertReason, verdict: "none" | "hold", confirmedAt: string | null = null): OutageAlertVerdict => ({
    kind: "outage_alert",
    verdict,
    reason,
    checks,
    startedAt: null,
    confirmedAt,
    sendStarted: false,
    sendEnded: false,
    endedBy: null,
    orphanedBy: [],
  });
  const self = e.controllers.find((c) => c.self);

  if (e.outage === null) {
    if (liveOpen.length === 0) return none("no_outage", "none");
    const startedAt = earliest(liveOpen.map((c) => c.openSince))!;
    const confirmedAt = earliest(liveOpen.map((c) => c.confirmedAt));
    const page = startPaging(e, startedAt, confirmedAt, checks);
    return { kind: "outage_alert", verdict: "open", reason: "outage_opened", checks, startedAt, confirmedAt, sendStarted: page.send, sendEnded: false, endedBy: null, orphanedBy: [] };
  }

  const outage = e.outage;
  if (liveOpen.length > 0) {
    const confirmedAt = outage.confirmedAt ?? earliest(liveOpen.map((c) => c.confirmedAt));
    if (outage.startedAlertAt !== null) return none("outage_paged", "none", confirmedAt);
    const page = startPaging(e, outage.startedAt, confirmedAt, checks);
    if (page.send) return { ...none("outage_confirmed", "none", confirmedAt), verdict: "send_started", sendStarted: true };
    return none(page.reason, "hold", confirmedAt);
  }

  // No live breaker is open. Over only once a live controller has seen the provider's API answer
  // since the outage began: a controller that just booted has seen nothing yet (the shell probes
  // for it), and a breaker that closes is an answer.
  const answered = live.filter((c) => c.answeredAt !== null && at(c.answeredAt) >= at(outage.startedAt));
  checks.push(check("provider_answered_since_start", answered.length > 0, `a live controller answered since ${outage.startedAt}`, answered.map((c) => c.bootId).join(",") || "none"));
  if (answered.length === 0) return none("awaiting_answer", "hold", outage.confirmedAt);
  const paged = outage.startedAlertAt !== null;
  checks.push(check("started_alert_sent", paged, "one ended per started", paged ? outage.startedAlertAt : "never paged"));
  return {
    kind: "outage_alert",
    verdict: "end",
    reason: "provider_answered",
    checks,
    startedAt: null,
    confirmedAt: outage.confirmedAt,
    sendStarted: false,
    sendEnded: paged,
    endedBy: self?.bootId ?? answered[0]!.bootId,
    orphanedBy: goneOpen,
  };
}

/** Paged only when a probe confirmed it and it has lasted the minimum (two checks on the verdict). */
function startPaging(
  e: OutageAlertEvidence,
  startedAt: string,
  confirmedAt: string | null,
  checks: Check[],
): { send: true } | { send: false; reason: "awaiting_confirmation" | "awaiting_min_duration" } {
  const lastedMs = Math.max(0, at(e.now) - at(startedAt));
  checks.push(check("confirmed_by_probe", confirmedAt !== null, "a probe found the provider unavailable", confirmedAt ?? "not yet"));
  checks.push(check("lasted_min_duration", lastedMs >= e.minDurationMs, `at least ${e.minDurationMs} ms`, lastedMs));
  if (confirmedAt === null) return { send: false, reason: "awaiting_confirmation" };
  if (lastedMs < e.minDurationMs) return { send: false, reason: "awaiting_min_duration" };
  return { send: true };
}
