import { ALERT_EVENT_TYPES, type AlertEventType } from "@/server/shared/alerts";

/**
 * What each alert event type reports, in a few words, for the alerts page's header: a record over
 * the engine's list of event types (server/engine/alerts.ts), so a type added there does not
 * compile until it is described here. Not a client module: the page (a server component) reads it.
 */
const EVENT_SUMMARY: Record<AlertEventType, string> = {
  "run.failed": "failed runs",
  "run.recovery_exhausted": "recovery that gave up",
  "run.succeeded": "succeeded runs (opt-in)",
  "run.cancelled": "cancelled runs (opt-in)",
  "provider.outage_started": "provider outages",
  "provider.outage_ended": "their end",
  "orphans.cost_over": "orphan costs over the threshold",
  "wave.failed": "failed chaos waves",
  "forecast.missed": "restarts that missed their forecast",
  test: "the Test button's delivery",
};

/** Every alert event type in the engine's order, with its summary. */
export const ALERT_EVENT_KINDS: ReadonlyArray<{ type: AlertEventType; summary: string }> = ALERT_EVENT_TYPES.map((type) => ({ type, summary: EVENT_SUMMARY[type] }));
