import { assertNever } from "./checks";

/**
 * Alerts (docs/rules.md §4, "Alerts"; docs/alerts.md): what an event says, and the judgements around its delivery. Pure: the
 * clock (`now`) and the jitter are arguments; the shells (server/alerts) write the outbox,
 * send and record.
 */

export const ALERT_EVENT_TYPES = [
  "run.failed",
  "run.recovery_exhausted",
  "run.succeeded",
  "run.cancelled",
  "provider.outage_started",
  "provider.outage_ended",
  "orphans.cost_over",
  "wave.failed",
  "forecast.missed",
  "test",
] as const;
export type AlertEventType = (typeof ALERT_EVENT_TYPES)[number];

export function isAlertEventType(v: string): v is AlertEventType {
  return (ALERT_EVENT_TYPES as readonly string[]).includes(v);
}

/**
 * Types an endpoint gets only when it names them: an endpoint with no types (the default, and
 * the `env` endpoint's) gets every type but these. Every run ends, so these are the volume of
 * the runs themselves, not something that needs a person (docs/alerts.md, "Run endings").
 */
export const OPT_IN_ALERT_EVENT_TYPES = ["run.succeeded", "run.cancelled"] as const satisfies readonly AlertEventType[];

export function isOptInAlertEventType(type: AlertEventType): boolean {
  return (OPT_IN_ALERT_EVENT_TYPES as readonly string[]).includes(type);
}

/** Whether an endpoint subscribed to `events` (none: the default set) gets an event of `type`. */
export function endpointWants(events: readonly string[], type: AlertEventType): boolean {
  return events.length === 0 ? !isOptInAlertEventType(type) : events.includes(type);
}

/** A run that ended failed (run.failed) or ran out of recovery attempts (run.recovery_exhausted). */
export interface RunAlertData {
  runId: string;
  companyId: string;
  taskId: string;
  agent: string;
  code: string;
  owner: string;
  canRetry: boolean;
  nextAction: string | null;
  detail: string;
  /** The run's page on the dashboard. */
  url: string;
}

/** A run that ended succeeded (run.succeeded) or cancelled (run.cancelled): opt-in types. */
export interface RunEndedAlertData {
  runId: string;
  companyId: string;
  taskId: string;
  agent: string;
  /** The platform's own id of the run, when it was submitted with one (null otherwise). */
  externalId: string | null;
  status: "succeeded" | "cancelled";
  /** Always null: an ending with a code is run.failed. */
  failureCode: null;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string;
  /** The run's page on the dashboard. */
  url: string;
}

export type AlertEvent =
  | { type: "run.failed"; data: RunAlertData }
  | { type: "run.recovery_exhausted"; data: RunAlertData & { attempts: number } }
  | { type: "run.succeeded"; data: RunEndedAlertData & { status: "succeeded" } }
  | { type: "run.cancelled"; data: RunEndedAlertData & { status: "cancelled" } }
  /** `outageId`: one outage's two alerts share it (their dedupe keys are built from it). */
  | { type: "provider.outage_started"; data: { outageId: string; provider: string; since: string; lastError: string | null; controller: string; url: string } }
  | { type: "provider.outage_ended"; data: { outageId: string; provider: string; since: string; endedAt: string; downSeconds: number; controller: string; url: string } }
  | { type: "orphans.cost_over"; data: { ratePerHour: number; thresholdPerHour: number; previousRatePerHour: number; orphans: number; url: string } }
  | { type: "wave.failed"; data: { waveId: string; companyId: string; seed: number; tasks: number; failedTasks: number; url: string } }
  | { type: "forecast.missed"; data: ForecastMissedData }
  | { type: "test"; data: { endpoint: string; requestedBy: string } };

/** A stored forecast run whose restart did not do what was forecast (§2.12): a defect of the forecast or of recovery. */
export interface ForecastMissedData {
  forecastId: string;
  runId: string;
  companyId: string;
  taskId: string;
  forecast: string;
  actual: string;
  differences: string;
  url: string;
}

/** What a receiver gets: `text` is what a Slack incoming webhook shows as is. */
export interface AlertPayload {
  type: AlertEventType;
  id: string;
  occurredAt: string;
  data: AlertEvent["data"];
  text: string;
}

const usd = (n: number) => `$${n.toFixed(2)}`;

/** One plain line (plus the link): readable in Slack, an e-mail or a log. */
export function alertText(event: AlertEvent): string {
  switch (event.type) {
    case "run.failed": {
      const d = event.data;
      const retry = d.canRetry ? "Retry offered" : "no Retry";
      return `Runwarden: run failed with ${d.code} (owner: ${d.owner}; ${retry}). ${d.companyId} / ${d.taskId} (agent ${d.agent}). ${d.nextAction ?? d.detail} ${d.url}`;
    }
    case "run.recovery_exhausted": {
      const d = event.data;
      const retry = d.canRetry ? "Retry offered" : "no Retry";
      return `Runwarden: recovery gave up after ${d.attempts} attempts, the run ended with ${d.code} (owner: ${d.owner}; ${retry}). ${d.companyId} / ${d.taskId}. ${d.url}`;
    }
    case "run.succeeded":
    case "run.cancelled": {
      const d = event.data;
      return `Runwarden: run ${d.status}. ${d.companyId} / ${d.taskId} (agent ${d.agent}${d.externalId ? `; external id ${d.externalId}` : ""}). ${d.url}`;
    }
    case "provider.outage_started":
      return `Runwarden: provider ${event.data.provider} unavailable since ${event.data.since}; runs wait for it (none fails for it). Last error: ${event.data.lastError ?? "none"}. ${event.data.url}`;
    case "provider.outage_ended":
      return `Runwarden: provider ${event.data.provider} is back after ${event.data.downSeconds} s (down since ${event.data.since}); waiting runs go on. ${event.data.url}`;
    case "orphans.cost_over":
      return `Runwarden: orphaned sandboxes cost ${usd(event.data.ratePerHour)}/h, over the ${usd(event.data.thresholdPerHour)}/h threshold (${event.data.orphans} orphans). ${event.data.url}`;
    case "wave.failed":
      return `Runwarden: chaos wave ${event.data.waveId} (seed ${event.data.seed}, ${event.data.companyId}) failed: ${event.data.failedTasks} of ${event.data.tasks} tasks. ${event.data.url}`;
    case "forecast.missed":
      return `Runwarden: a restart did not do what its forecast said for run ${event.data.runId} (${event.data.companyId} / ${event.data.taskId}): forecast ${event.data.forecast}, actual ${event.data.actual} (${event.data.differences}). A defect of the forecast or of recovery. ${event.data.url}`;
    case "test":
      return `Runwarden: test alert for endpoint "${event.data.endpoint}", sent by ${event.data.requestedBy}.`;
    default:
      return assertNever(event);
  }
}

export function alertPayload(event: AlertEvent, id: string, occurredAt: string): AlertPayload {
  return { type: event.type, id, occurredAt, data: event.data, text: alertText(event) };
}

/** How deliveries are retried (RUNWARDEN_ALERT_RETRY_*). */
export interface DeliveryPolicy {
  /** The first back-off; doubles each attempt. */
  baseMs: number;
  capMs: number;
  /** Attempts before the delivery is given up (`failed`). */
  maxAttempts: number;
}

export interface DeliveryEvidence {
  /** Attempts made, this one included. */
  attempts: number;
  /** The receiver's answer, or why there was none (refused, timed out). */
  answer: { status: number } | { error: string };
  now: string;
  policy: DeliveryPolicy;
  /** In [0, 1): the caller's randomness, so two senders' retries do not beat in step. */
  jitter: number;
}

export type DeliveryVerdict =
  | { verdict: "delivered"; reason: string }
  | { verdict: "retry"; reason: string; delayMs: number; nextAttemptAt: string }
  | { verdict: "give_up"; reason: string };

/** The back-off before attempt `attempts + 1`: capped doubling, then "equal jitter" (half fixed, half random). */
export function deliveryBackoffMs(attempts: number, policy: DeliveryPolicy, jitter: number): number {
  const full = Math.min(policy.capMs, policy.baseMs * 2 ** Math.max(0, Math.min(attempts - 1, 30)));
  return Math.round(full / 2 + (full / 2) * Math.min(Math.max(jitter, 0), 1));
}

/** 2xx is delivered; anything else is retried with back-off until the give-up point. */
export function judgeDelivery(e: DeliveryEvidence): DeliveryVerdict {
  const what = "status" in e.answer ? `HTTP ${e.answer.status}` : e.answer.error;
  if ("status" in e.answer && e.answer.status >= 200 && e.answer.status < 300) return { verdict: "delivered", reason: what };
  if (e.attempts >= e.policy.maxAttempts) return { verdict: "give_up", reason: `${what}; gave up after ${e.attempts} attempts` };
  const delayMs = deliveryBackoffMs(e.attempts, e.policy, e.jitter);
  return { verdict: "retry", reason: what, delayMs, nextAttemptAt: new Date(Date.parse(e.now) + delayMs).toISOString() };
}

/** Once per crossing: the orphans' rate went from under the threshold to at or over it. Null threshold: off. */
export function crossedCostThreshold(previousRatePerHour: number, ratePerHour: number, thresholdPerHour: number | null): boolean {
  return thresholdPerHour !== null && previousRatePerHour < thresholdPerHour && ratePerHour >= thresholdPerHour;
}
