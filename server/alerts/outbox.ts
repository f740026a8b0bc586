import crypto from "node:crypto";
import { Prisma, type Db } from "../db/client";
import { alertPayload, isOptInAlertEventType, type AlertEvent } from "../engine/alerts";
import { env } from "../env";

type Tx = Db | Prisma.TransactionClient;

/** A page of the dashboard as an alert links it (the same base as sign-in's `publicUrl`). */
export function dashboardLink(path: string): string {
  return `${(env.RUNWARDEN_PUBLIC_URL ?? `http://localhost:${env.PORT}`).replace(/\/+$/, "")}${path}`;
}

/**
 * Writes an event into the outbox, in the caller's transaction (the change it reports), with
 * one pending delivery per enabled endpoint of the instance subscribed to its type (no types:
 * every type but the opt-in ones, which only an endpoint naming them gets: `endpointWants` in
 * engine/alerts.ts, the same rule in SQL). The dedupe key makes the same event — found by two controllers, or written by
 * a transaction that is retried — one row: a second write adds nothing. Returns the event's
 * id, or null when it already existed.
 */
export async function emitAlert(tx: Tx, instanceId: string, event: AlertEvent, dedupeKey: string, onlyEndpointId?: string): Promise<string | null> {
  const id = crypto.randomUUID();
  const payload = JSON.stringify(alertPayload(event, id, new Date().toISOString()));
  const subscribed = isOptInAlertEventType(event.type) ? Prisma.sql`${event.type} = ANY(e.events)` : Prisma.sql`(cardinality(e.events) = 0 OR ${event.type} = ANY(e.events))`;
  const endpointFilter = onlyEndpointId ? Prisma.sql`AND e.id = ${onlyEndpointId}::uuid` : Prisma.sql`AND e.enabled AND ${subscribed}`;
  const rows = await tx.$queryRaw<Array<{ id: string }>>`
    WITH ev AS (
      INSERT INTO alert_events (id, instance_id, type, dedupe_key, payload)
      VALUES (${id}::uuid, ${instanceId}, ${event.type}, ${dedupeKey}, ${payload}::jsonb)
      ON CONFLICT (dedupe_key) DO NOTHING
      RETURNING id),
    d AS (
      INSERT INTO alert_deliveries (id, event_id, endpoint_id, updated_at)
      SELECT gen_random_uuid(), ev.id, e.id, now() FROM ev JOIN alert_endpoints e ON e.instance_id = ${instanceId} ${endpointFilter}
      RETURNING 1)
    SELECT id::text FROM ev`;
  return rows[0]?.id ?? null;
}
