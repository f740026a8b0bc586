import crypto from "node:crypto";
import type { Db } from "./client";

/**
 * This installation's instance id (DOMAIN.md §1, §2.9). Every sandbox it creates carries it
 * in a label, and ownership is judged against it, so two installations must never share
 * one: it is generated once per database (the single `installation` row, first writer
 * wins) and kept. An explicit RUNWARDEN_INSTANCE_ID wins and leaves the row alone.
 */
export async function resolveInstanceId(db: Db, explicit?: string | null): Promise<string> {
  if (explicit) return explicit;
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
