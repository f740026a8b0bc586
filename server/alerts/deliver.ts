import type { LookupAddress } from "node:dns";
import http from "node:http";
import https from "node:https";
import net from "node:net";
import type { Logger } from "pino";
import type { Db } from "../db/client";
import { judgeDelivery, type DeliveryPolicy, type DeliveryVerdict } from "../engine/alerts";
import { inLanes } from "../lib/lanes";
import { redactUrl } from "../lib/redact";
import { ALLOW_NETWORKS_VARIABLE, describeRefusal, resolveDestination, type DestinationPolicy } from "./destinations";
import { signedHeaders } from "./sign";

/**
 * The outbox's sender, run by every controller on its tick. Due deliveries are claimed with
 * FOR UPDATE SKIP LOCKED and a `claimed_until` lease longer than a request's timeout, so two
 * senders never send one delivery at once; each claim counts the attempt (a sender killed
 * mid-request has spent it), and its result is written only while the claim is still its own
 * (`attempts` unchanged). A claim that lapses — its sender died — is taken again by the next
 * sender under the same `webhook-id`, so the receiver can drop a duplicate.
 *
 * Each send resolves the endpoint's host, judges every address (destinations.ts) and connects
 * to exactly those addresses; what the delivery log keeps of a request without an answer is
 * that there was none, never why (docs/alerts.md "Where a webhook may go").
 */

export interface AlertSenderConfig extends DeliveryPolicy {
  /** Bound on one request. */
  timeoutMs: number;
  /** Deliveries claimed per pass (sent at once). */
  batch: number;
  /** Which addresses a console endpoint may be sent to (RUNWARDEN_ALERT_ALLOW_NETWORKS). */
  destinations: DestinationPolicy;
}

interface Claimed {
  id: string;
  attempts: number;
  eventId: string;
  body: string;
  endpointId: string;
  /** `env`: the operator's own endpoint (RUNWARDEN_ALERT_WEBHOOK_URL), sent wherever it points. */
  source: string;
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
    RETURNING d.id::text AS id, d.attempts, ev.id::text AS "eventId", ev.payload::text AS body, e.id::text AS "endpointId", e.source, e.url, e.secret`;
}

/**
 * What the delivery log keeps of a request that got no answer — a refused connection, a
 * timeout, a name that did not resolve: the difference is a port scanner's reading of the
 * controllers' network, so it goes to the controller's log only.
 */
export const NO_ANSWER = "not delivered: no answer from the receiver (the controller's log says why)";

/** The answer's status; or, without one, what the delivery log may show and what only the controller's log does. */
export type PostAnswer = { status: number } | { error: string; detail: string };

/** A lookup that answers the addresses already checked: the connection never asks DNS again. */
function pinnedLookup(addresses: readonly LookupAddress[]): net.LookupFunction {
  return (_hostname, options, callback) => {
    const family = options.family === "IPv4" ? 4 : options.family === "IPv6" ? 6 : (options.family ?? 0);
    const usable = addresses.filter((a) => family === 0 || a.family === family);
    const first = usable[0];
    if (!first) callback(Object.assign(new Error(`no checked IPv${family} address`), { code: "ENOTFOUND" }), []);
    else if (options.all) callback(null, usable);
    else callback(null, first.address, first.family);
  };
}

/**
 * The POST itself, to `url` at exactly `addresses` (checked by the caller): no other DNS answer is
 * ever used. `timeoutMs` is what is left of the delivery's budget; a timeout is reported as the
 * whole budget (`budgetMs`), so the detail a receiver's owner reads does not depend on how long
 * the lookup before it took.
 */
export function postToAddresses(url: URL, host: string, addresses: readonly LookupAddress[], body: string, headers: Record<string, string>, timeoutMs: number, budgetMs = timeoutMs): Promise<PostAnswer> {
  return new Promise((resolve) => {
    const secure = url.protocol === "https:";
    const options: https.RequestOptions = {
      method: "POST",
      host,
      ...(url.port !== "" ? { port: Number(url.port) } : {}),
      path: `${url.pathname}${url.search}`,
      ...(url.username !== "" ? { auth: `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}` } : {}),
      headers: { host: url.host, "content-type": "application/json", "content-length": String(Buffer.byteLength(body)), "user-agent": "Runwarden-Alerts/1", ...headers },
      // A connection of its own: a pooled one could have been opened to an answer judged under another policy.
      agent: false,
      lookup: pinnedLookup(addresses),
      signal: AbortSignal.timeout(timeoutMs),
      // TLS checks the certificate against the name, not the address connected to.
      ...(secure && net.isIP(host) === 0 ? { servername: host } : {}),
    };
    // A redirect is an answer (not 2xx): never followed, so it cannot lead past the check.
    const req = (secure ? https : http).request(options, (res) => {
      resolve({ status: res.statusCode ?? 0 });
      res.destroy();
    });
    req.on("error", (err: Error & { code?: string }) => {
      resolve({ error: NO_ANSWER, detail: err.name === "AbortError" || err.name === "TimeoutError" ? `timed out after ${budgetMs} ms` : (err.code ?? err.message) });
    });
    req.end(body);
  });
}

/**
 * One POST to `rawUrl`: its host resolved and judged by `policy` (`"any"`: the operator's own
 * endpoint, resolved but not judged), then the request sent to the addresses checked. The
 * timeout bounds the lookup and the request together.
 */
export async function post(rawUrl: string, body: string, headers: Record<string, string>, timeoutMs: number, policy: DestinationPolicy | "any"): Promise<PostAnswer> {
  const started = Date.now();
  const destination = await resolveDestination(rawUrl, policy, timeoutMs);
  if (!destination.ok) {
    if (destination.why === "unresolved") return { error: NO_ANSWER, detail: `the name did not resolve: ${destination.detail}` };
    return {
      error: `not delivered: refused, ${destination.literal ? "the address is" : "the name resolves to"} ${destination.what}; allow it with ${ALLOW_NETWORKS_VARIABLE}`,
      detail: describeRefusal(destination),
    };
  }
  return postToAddresses(destination.url, destination.host, destination.addresses, body, headers, Math.max(1, timeoutMs - (Date.now() - started)), timeoutMs);
}

async function sendOne(db: Db, c: Claimed, config: AlertSenderConfig, log: Logger | undefined): Promise<DeliveryResult> {
  const posted = await post(c.url, c.body, signedHeaders(c.secret, c.eventId, new Date(), c.body), config.timeoutMs, c.source === "env" ? "any" : config.destinations);
  const answer = "status" in posted ? { status: posted.status } : { error: posted.error };
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
  if (verdict.verdict !== "delivered") {
    // The whole URL is the endpoint's credential: the log names it redacted, and says why there was no answer.
    log?.warn({ delivery: c.id, event: c.eventId, endpoint: c.endpointId, url: redactUrl(c.url), attempts: c.attempts, verdict: verdict.verdict, reason: verdict.reason, ...("detail" in posted ? { why: posted.detail } : {}) }, "alert not delivered");
  }
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
