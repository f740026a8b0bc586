import type { Db } from "./client";

/**
 * The database's clock. Heartbeats and silence are judged on it (docs/rules.md §2.10): controllers
 * on several hosts share one database, never one system clock, so an NTP step on one host must
 * not make another look silent.
 */
export async function databaseNow(db: Pick<Db, "$queryRaw">): Promise<Date> {
  const rows = await db.$queryRaw<Array<{ now: Date }>>`SELECT now() AS now`;
  const now = rows[0]?.now;
  if (!(now instanceof Date)) throw new Error("the database did not answer SELECT now() with a timestamp");
  return now;
}
