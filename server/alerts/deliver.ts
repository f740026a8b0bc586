import type { Logger } from "pino";
import type { Db } from "../db/client";
import { judgeDelivery, type DeliveryPolicy, type DeliveryVerdict } from "../engine/alerts";
import { inLanes } from "../lib/lanes";
import { signedHeaders } from "./sign";

/**
 * The outbox's sender, run by every controller on its tick. Due deliveries are claimed with
 * FOR UPDATE SKIP LOCKED and a `claimed_until` lease longer than a request's timeout, so two
 * senders never send one delivery at once; each claim counts the attempt (a sender killed
 * mid-request has spent it), and its result is written only while the claim is still its own
 * (`attempts` unchanged). A claim that lapses — its sender died — is taken again by the next
 * sender under the same `webhook-id`, so the receiver can drop a duplicate.
 */

export interface AlertSenderConfig extends DeliveryPolicy {
  /** Bound on one request. */
  timeoutMs: number;
  /** Deliveries claimed per pass (sent at once). */
  batch: number;
}

interface Claimed {
  id: string;
  attempts: number;
  eventId: string;
  body: string;
  url: string;
  secret: string;
}

export interface DeliveryResult {
  deliveryId: string;
  attempts: number;
  verdict: DeliveryVerdict["verdict"];
  /** False when the claim was lost before the result was written (another sender has it now). */
  recorded: boolean;
}

/** The claim outlasts the request it covers (its timeout) by a margin. */
export function claimLeaseMs(config: Pick<AlertSenderConfig, "timeoutMs">): number {
  return config.timeoutMs * 2 + 1_000;
}

export async function claimDueDeliveries(db: Db, instanceId: string, config: AlertSenderConfig): Promise<Claimed[]> {
  const leaseSeconds = claimLeaseMs(config) / 1000;
  // Test deliveries go to a disabled endpoint too: the admin asked for exactly that one.
  return db.$queryRaw<Claimed[]>`
    UPDATE alert_deliveries d
    SET claimed_until = now() + make_interval(secs => ${leaseSeconds}), attempts = d.attempts + 1, updated_at = now()
    FROM alert_endpoints e, alert_events ev
    WHERE d.id IN (
      SELECT d2.id FROM alert_deliveries d2
      JOIN alert_endpoints e2 ON e2.id = d2.endpoint_id
      JOIN alert_events ev2 ON ev2.id = d2.event_id
      WHERE d2.status = 'pending' AND d2.next_attempt_at <= now() AND (d2.claimed_until IS NULL OR d2.claimed_until <= now())
        AND e2.instance_id = ${instanceId} AND (e2.enabled OR ev2.type = 'test')
      ORDER BY d2.next_attempt_at, d2.id
      LIMIT ${config.batch}
      FOR UPDATE OF d2 SKIP LOCKED)
    AND e.id = d.endpoint_id AND ev.id = d.event_id
    RETURNING d.id::text AS id, d.attempts, ev.id::text AS "eventId", ev.payload::text AS body, e.url, e.secret`;
}

/** One POST; the answer's status, or why there was none. */
export async function post(url: string, body: string, headers: Record<string, string>, timeoutMs: number): Promise<{ status: number } | { error: string }> {
  try {
    const res = await fetch(url, {
      method: "POST",
      body,
      headers: { "content-type": "application/json", "user-agent": "Runwarden-Alerts/1", ...headers },
      redirect: "manual",
      signal: AbortSignal.timeout(timeoutMs),
    });
    await res.body?.cancel().catch(() => {});
    return { status: res.status };
  } catch (err) {
    const e = err as { name?: string; message?: string; cause?: { code?: string; message?: string } };
    if (e.name === "TimeoutError") return { error: `timed out after ${timeoutMs} ms` };
    return { error: e.cause?.code ?? e.cause?.message ?? e.message ?? String(err) };
  }
}

async function sendOne(db: Db, c: Claimed, config: AlertSenderConfig, log: Logger | undefined): Promise<DeliveryResult> {
  const answer = await post(c.url, c.body, signedHeaders(c.secret, c.eventId, new Date(), c.body), config.timeoutMs);
  const verdict = judgeDelivery({ attempts: c.attempts, answer, now: new Date().toISOString(), policy: config, jitter: Math.random() });
  const status = verdict.verdict === "delivered" ? "delivered" : verdict.verdict === "retry" ? "pending" : "failed";
  const lastStatus = "status" in answer ? answer.status : null;
  const lastError = verdict.verdict === "delivered" ? null : verdict.reason.slice(0, 500);
  const nextAttemptAt = verdict.verdict === "retry" ? new Date(verdict.nextAttemptAt) : null;
  // Only while the claim is still ours: a sender whose claim lapsed and was taken again writes nothing.
  const written = await db.$executeRaw`
    UPDATE alert_deliveries SET
      status = ${status}, last_status = ${lastStatus}, last_error = ${lastError}, claimed_until = NULL, updated_at = now(),
      next_attempt_at = COALESCE(${nextAttemptAt}::timestamptz, next_attempt_at),
      delivered_at = CASE WHEN ${status} = 'delivered' THEN now() ELSE delivered_at END
    WHERE id = ${c.id}::uuid AND attempts = ${c.attempts} AND status = 'pending'`;
  if (verdict.verdict !== "delivered") log?.warn({ delivery: c.id, event: c.eventId, attempts: c.attempts, verdict: verdict.verdict, reason: verdict.reason }, "alert not delivered");
  return { deliveryId: c.id, attempts: c.attempts, verdict: verdict.verdict, recorded: written === 1 };
}

/** Batches one pass sends at most, back to back, while each comes back full (a backlog after an incident). */
const MAX_BATCHES_PER_PASS = 8;

/** One pass: claims what is due and sends it, a batch at a time. */
export async function deliverDueAlerts(db: Db, instanceId: string, config: AlertSenderConfig, log?: Logger): Promise<DeliveryResult[]> {
  const results: DeliveryResult[] = [];
  for (let batch = 0; batch < MAX_BATCHES_PER_PASS; batch++) {
    const claimed = await claimDueDeliveries(db, instanceId, config);
    await inLanes(claimed, claimed.length, async (c) => {
      results.push(await sendOne(db, c, config, log));
    });
    if (claimed.length < config.batch) break;
  }
  return results;
}
