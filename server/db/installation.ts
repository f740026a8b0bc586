import crypto from "node:crypto";
import type { Db, Prisma } from "./client";

/**
 * This installation's instance id (docs/rules.md §1, §2.9). Every sandbox it creates carries it
 * in a label, and ownership is judged against it, so two installations must never share
 * one: it is generated once per database (the single `installation` row, first writer
 * wins) and kept. An explicit RUNWARDEN_INSTANCE_ID wins and leaves the row alone.
 */
export async function resolveInstanceId(db: Db, explicit?: string | null): Promise<string> {
  if (explicit) return explicit;
  // Read first: a reader on read-only credentials (`runwarden forecast --no-store`) writes nothing.
  const existing = await db.installation.findUnique({ where: { id: 1 } });
  if (existing) return existing.instanceId;
  const generated = `inst-${crypto.randomBytes(6).toString("hex")}`;
  // ON CONFLICT: several processes booting on one new database agree on the first id.
  await db.$executeRaw`INSERT INTO installation (id, instance_id) VALUES (1, ${generated}) ON CONFLICT (id) DO NOTHING`;
  const row = await db.installation.findUniqueOrThrow({ where: { id: 1 } });
  return row.instanceId;
}

const cache = new WeakMap<Db, Promise<string>>();

/** `resolveInstanceId`, asked once per database client. */
export function instanceIdOf(db: Db, explicit?: string | null): Promise<string> {
  let p = cache.get(db);
  if (!p) {
    p = resolveInstanceId(db, explicit);
    // A failed read (database down) is asked again next time, not remembered.
    p.catch(() => cache.delete(db));
    cache.set(db, p);
  }
  return p;
}

/**
 * The `instances` row, made by whoever needs it first. A single INSERT … ON CONFLICT: Prisma's
 * upsert reads then inserts, so a controller booting while a run is submitted on a new
 * instance could lose that race with a unique violation (which submit read as "the task
 * already has an active run").
 */
export async function ensureInstance(db: Db | Prisma.TransactionClient, id: string, createPrefix = "rw"): Promise<void> {
  await db.$executeRaw`INSERT INTO instances (id, name, create_prefix) VALUES (${id}, ${id}, ${createPrefix}) ON CONFLICT (id) DO NOTHING`;
}
