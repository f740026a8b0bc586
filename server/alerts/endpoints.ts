import { z } from "zod";
import { writeAudit, type Actor } from "../audit/write";
import type { Db } from "../db/client";
import { ALERT_EVENT_TYPES } from "../engine/alerts";
import { AppError } from "../errors";
import { uuidSchema } from "../lib/ids";
import { fingerprint, redactUrl } from "../lib/redact";
import { ALERT_DELIVERY_STATUSES } from "../shared/alerts";
import type { CompanyScope } from "../shared/roles";
import { NO_ANSWER } from "./deliver";
import { checkDestination, type DestinationPolicy } from "./destinations";
import { emitAlert } from "./outbox";
import { checkSecret, newSecret, SECRET_PREFIX } from "./sign";

/**
 * The console's alert endpoints (admin only): list, add, edit, enable/disable, delete, test,
 * and each endpoint's delivery log. Every mutation is audited. An endpoint's URL is its
 * credential (a Slack incoming webhook's is): it is never answered or audited whole, only
 * redacted (`server/lib/redact.ts`); a secret is returned once (on add, or when it is replaced) and
 * shown afterwards as a fingerprint. A URL added or changed is refused when it resolves to an
 * address the destination policy does not allow (`destinations.ts`, docs/alerts.md).
 */

const urlSchema = z
  .url()
  .max(2000)
  .refine((u) => /^https?:\/\//i.test(u), "must be an http(s) URL");
const eventsSchema = z.array(z.enum(ALERT_EVENT_TYPES)).max(ALERT_EVENT_TYPES.length);
const secretSchema = z.string().min(16, "at least 16 characters").max(200);

export const alertEndpointSchema = z.object({
  id: z.string(),
  name: z.string(),
  /** The URL redacted: scheme, host and a fingerprint of the whole (`https://hooks.slack.com/…#a1b2c3d4`); never the URL. */
  destination: z.string(),
  /** A fingerprint of the secret (`whsec_…#1a2b3c4d`): none of its characters. */
  secretHint: z.string(),
  events: z.array(z.string()),
  enabled: z.boolean(),
  source: z.string(),
  createdBy: z.string(),
  createdAt: z.date(),
  updatedAt: z.date(),
  deliveries: z.object({ pending: z.number(), delivered: z.number(), failed: z.number() }),
});
export type AlertEndpointView = z.infer<typeof alertEndpointSchema>;

export const alertsListOutput = z.array(alertEndpointSchema);
export const alertsCreateInput = z.object({ name: z.string().trim().min(1).max(100), url: urlSchema, secret: secretSchema.optional(), events: eventsSchema.default([]), enabled: z.boolean().default(true) });
export const alertsUpdateInput = z.object({
  id: uuidSchema,
  name: z.string().trim().min(1).max(100).optional(),
  url: urlSchema.optional(),
  events: eventsSchema.optional(),
  /** A new secret: the one given, or a generated one with `rotateSecret`. */
  secret: secretSchema.optional(),
  rotateSecret: z.boolean().optional(),
});
export const alertsRefInput = z.object({ id: uuidSchema });
export const alertsSetEnabledInput = z.object({ id: uuidSchema, enabled: z.boolean() });
/** An endpoint and, when it was just set, its secret (shown once). */
export const alertsEndpointOutput = z.object({ endpoint: alertEndpointSchema, secret: z.string().nullable() });
export const alertsDeleteOutput = z.object({ id: z.string(), deleted: z.boolean() });
export const alertsTestOutput = z.object({ eventId: z.string(), deliveryId: z.string() });
export const alertsDeliveriesInput = z.object({ endpointId: uuidSchema, limit: z.number().int().min(1).max(200).default(50) });
export const alertDeliverySchema = z.object({
  id: z.string(),
  eventId: z.string(),
  type: z.string(),
  text: z.string(),
  status: z.enum(ALERT_DELIVERY_STATUSES),
  attempts: z.number(),
  lastStatus: z.number().nullable(),
  lastError: z.string().nullable(),
  nextAttemptAt: z.date(),
  deliveredAt: z.date().nullable(),
  createdAt: z.date(),
  updatedAt: z.date(),
});
export const alertsDeliveriesOutput = z.array(alertDeliverySchema);

export interface AlertsActing {
  db: Db;
  instanceId: string;
  actor: Actor;
  scope: CompanyScope;
}

/** Alerts carry every company's runs: only an admin who sees every company configures them. */
function mustSeeAll(scope: CompanyScope): void {
  if (!scope.all) throw new AppError("FORBIDDEN", "alerts carry every company's runs: they are configured by an admin who sees every company");
}

function hint(secret: string): string {
  return `${secret.startsWith(SECRET_PREFIX) ? SECRET_PREFIX : ""}…#${fingerprint(secret)}`;
}

type EndpointRow = { id: string; name: string; url: string; secret: string; events: string[]; enabled: boolean; source: string; createdBy: string; createdAt: Date; updatedAt: Date };

async function view(db: Db, rows: EndpointRow[]): Promise<AlertEndpointView[]> {
  const counts = rows.length
    ? await db.alertDelivery.groupBy({ by: ["endpointId", "status"], where: { endpointId: { in: rows.map((r) => r.id) } }, _count: { _all: true } })
    : [];
  return rows.map((r) => {
    const of = (status: string) => counts.find((c) => c.endpointId === r.id && c.status === status)?._count._all ?? 0;
    const { secret, url, ...rest } = r;
    return { ...rest, destination: redactUrl(url), secretHint: hint(secret), deliveries: { pending: of("pending"), delivered: of("delivered"), failed: of("failed") } };
  });
}

async function one(db: Db, instanceId: string, id: string): Promise<EndpointRow> {
  const row = await db.alertEndpoint.findFirst({ where: { id, instanceId } });
  if (!row) throw new AppError("NOT_FOUND", `no alert endpoint ${id}`);
  return row;
}

export async function listEndpoints(a: Omit<AlertsActing, "actor">): Promise<AlertEndpointView[]> {
  mustSeeAll(a.scope);
  return view(a.db, await a.db.alertEndpoint.findMany({ where: { instanceId: a.instanceId }, orderBy: [{ createdAt: "asc" }, { id: "asc" }] }));
}

function validSecret(secret: string): string {
  const problem = checkSecret(secret);
  if (problem) throw new AppError("INVALID_INPUT", `secret: ${problem}`);
  return secret;
}

/** Adding or changing an endpoint: also the policy its URL is judged by (RUNWARDEN_ALERT_ALLOW_NETWORKS). */
export interface AlertsChanging extends AlertsActing {
  destinations: DestinationPolicy;
}

export async function createEndpoint(a: AlertsChanging, input: z.infer<typeof alertsCreateInput>) {
  mustSeeAll(a.scope);
  const secret = validSecret(input.secret ?? newSecret());
  await checkDestination(input.url, a.destinations);
  return a.db.$transaction(async (tx) => {
    const row = await tx.alertEndpoint.create({
      data: { instanceId: a.instanceId, name: input.name, url: input.url, secret, events: input.events, enabled: input.enabled, source: "console", createdBy: a.actor.id },
    });
    await writeAudit(tx, a.actor, { action: "alerts.create", targetType: "alert_endpoint", targetId: row.id, input: { name: input.name, url: redactUrl(input.url), events: input.events, enabled: input.enabled }, outcome: "ok" });
    const [endpoint] = await view(tx as unknown as Db, [row]);
    return { endpoint: endpoint!, secret };
  });
}

export async function updateEndpoint(a: AlertsChanging, input: z.infer<typeof alertsUpdateInput>) {
  mustSeeAll(a.scope);
  const current = await one(a.db, a.instanceId, input.id);
  if (input.url !== undefined && input.url !== current.url) {
    // The `env` endpoint is sent wherever it points because its URL is the operator's own; one
    // typed here would be sent unjudged too (and replaced at the next controller start).
    if (current.source === "env") throw new AppError("INVALID_INPUT", "url: this endpoint's URL is RUNWARDEN_ALERT_WEBHOOK_URL, set again at every controller start: change the variable");
    await checkDestination(input.url, a.destinations);
  }
  const secret = input.secret !== undefined ? validSecret(input.secret) : input.rotateSecret ? newSecret() : null;
  return a.db.$transaction(async (tx) => {
    const row = await tx.alertEndpoint.update({
      where: { id: input.id },
      data: {
        ...(input.name !== undefined ? { name: input.name } : {}),
        ...(input.url !== undefined ? { url: input.url } : {}),
        ...(input.events !== undefined ? { events: input.events } : {}),
        ...(secret !== null ? { secret } : {}),
      },
    });
    await writeAudit(tx, a.actor, {
      action: "alerts.update",
      targetType: "alert_endpoint",
      targetId: row.id,
      input: { name: input.name, url: input.url === undefined ? undefined : redactUrl(input.url), events: input.events, secretChanged: secret !== null },
      outcome: "ok",
    });
    const [endpoint] = await view(tx as unknown as Db, [row]);
    return { endpoint: endpoint!, secret };
  });
}

export async function setEndpointEnabled(a: AlertsActing, input: z.infer<typeof alertsSetEnabledInput>) {
  mustSeeAll(a.scope);
  await one(a.db, a.instanceId, input.id);
  return a.db.$transaction(async (tx) => {
    const row = await tx.alertEndpoint.update({ where: { id: input.id }, data: { enabled: input.enabled } });
    await writeAudit(tx, a.actor, { action: input.enabled ? "alerts.enable" : "alerts.disable", targetType: "alert_endpoint", targetId: row.id, input, outcome: "ok" });
    const [endpoint] = await view(tx as unknown as Db, [row]);
    return { endpoint: endpoint!, secret: null };
  });
}

/** Deletes the endpoint and its delivery log (its events stay, for the other endpoints). */
export async function deleteEndpoint(a: AlertsActing, input: z.infer<typeof alertsRefInput>) {
  mustSeeAll(a.scope);
  const row = await one(a.db, a.instanceId, input.id);
  return a.db.$transaction(async (tx) => {
    const { count } = await tx.alertEndpoint.deleteMany({ where: { id: input.id, instanceId: a.instanceId } });
    await writeAudit(tx, a.actor, { action: "alerts.delete", targetType: "alert_endpoint", targetId: row.id, input: { name: row.name, url: redactUrl(row.url), source: row.source }, outcome: "ok" });
    return { id: row.id, deleted: count === 1 };
  });
}

/** A `test` event to this one endpoint, through the same outbox and sender as every alert. */
export async function testEndpoint(a: AlertsActing, input: z.infer<typeof alertsRefInput>) {
  mustSeeAll(a.scope);
  const row = await one(a.db, a.instanceId, input.id);
  return a.db.$transaction(async (tx) => {
    const eventId = await emitAlert(tx, a.instanceId, { type: "test", data: { endpoint: row.name, requestedBy: a.actor.id } }, `test:${crypto.randomUUID()}`, row.id);
    const delivery = eventId ? await tx.alertDelivery.findFirst({ where: { eventId, endpointId: row.id } }) : null;
    if (!eventId || !delivery) throw new AppError("INTERNAL", "the test event was not written");
    await writeAudit(tx, a.actor, { action: "alerts.test", targetType: "alert_endpoint", targetId: row.id, detail: { eventId, deliveryId: delivery.id }, outcome: "ok" });
    return { eventId, deliveryId: delivery.id };
  });
}

/**
 * A delivery's last error as the log shows it. One without an answer says only that (deliver.ts
 * `NO_ANSWER`); rows written before that rule held the connection's error code, shown so too.
 */
function shownError(lastStatus: number | null, lastError: string | null): string | null {
  if (lastError === null || lastStatus !== null || lastError.startsWith("not delivered:")) return lastError;
  return `${NO_ANSWER}${/; gave up after \d+ attempts$/.exec(lastError)?.[0] ?? ""}`;
}

/** The endpoint's delivery log, newest first. */
export async function listDeliveries(a: Omit<AlertsActing, "actor">, input: z.infer<typeof alertsDeliveriesInput>) {
  mustSeeAll(a.scope);
  await one(a.db, a.instanceId, input.endpointId);
  const rows = await a.db.alertDelivery.findMany({
    where: { endpointId: input.endpointId },
    orderBy: [{ createdAt: "desc" }, { id: "desc" }],
    take: input.limit,
    include: { event: { select: { type: true, payload: true } } },
  });
  return rows.map((d) => ({
    id: d.id,
    eventId: d.eventId,
    type: d.event.type,
    text: typeof (d.event.payload as { text?: unknown } | null)?.text === "string" ? (d.event.payload as { text: string }).text : "",
    status: z.enum(ALERT_DELIVERY_STATUSES).catch("pending").parse(d.status),
    attempts: d.attempts,
    lastStatus: d.lastStatus,
    lastError: shownError(d.lastStatus, d.lastError),
    nextAttemptAt: d.nextAttemptAt,
    deliveredAt: d.deliveredAt,
    createdAt: d.createdAt,
    updatedAt: d.updatedAt,
  }));
}

/**
 * RUNWARDEN_ALERT_WEBHOOK_URL at a controller's start: the instance's one `env` endpoint,
 * created or pointed at that URL (with that secret, or the one it has, or a new one). Under an
 * advisory lock, so controllers starting together make one. Whether it is enabled stays as an
 * admin left it.
 */
export async function upsertEnvEndpoint(db: Db, instanceId: string, url: string, secret: string | null, actor: Actor): Promise<{ id: string; created: boolean }> {
  if (secret !== null) validSecret(secret);
  return db.$transaction(async (tx) => {
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext(${`alerts:env-endpoint:${instanceId}`}))`;
    const existing = await tx.alertEndpoint.findFirst({ where: { instanceId, source: "env" }, orderBy: { createdAt: "asc" } });
    if (existing) {
      if (existing.url !== url || (secret !== null && existing.secret !== secret)) {
        await tx.alertEndpoint.update({ where: { id: existing.id }, data: { url, ...(secret !== null ? { secret } : {}) } });
        await writeAudit(tx, actor, { action: "alerts.env_update", targetType: "alert_endpoint", targetId: existing.id, input: { url: redactUrl(url), secretChanged: secret !== null && existing.secret !== secret }, outcome: "ok" });
      }
      return { id: existing.id, created: false };
    }
    const row = await tx.alertEndpoint.create({
      data: { instanceId, name: "RUNWARDEN_ALERT_WEBHOOK_URL", url, secret: secret ?? newSecret(), events: [], enabled: true, source: "env", createdBy: "env" },
    });
    await writeAudit(tx, actor, { action: "alerts.env_create", targetType: "alert_endpoint", targetId: row.id, input: { url: redactUrl(url), secretGiven: secret !== null }, outcome: "ok" });
    return { id: row.id, created: true };
  });
}
