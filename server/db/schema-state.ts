import type { Db } from "./client";
import { listMigrations } from "./migrate";

/**
 * Where the database's schema stands against this version's migrations (docs/operations.md,
 * "Upgrades and migrations"): `behind`, this version's migrations it lacks (a command of the new
 * version run before the deploy migrated, e.g. the forecast as a deploy gate); `ahead`, applied
 * migrations this version does not know (a newer version migrated; every migration being an
 * expand step, this version goes on). Only a starting controller, `npm start` and
 * `npm run db:migrate` migrate.
 */
export interface SchemaState {
  behind: string[];
  ahead: string[];
}

export async function schemaState(db: Db): Promise<SchemaState> {
  const known = listMigrations().map((m) => m.name);
  // Without the migrations beside it (an install without prisma/) nothing can be compared.
  if (known.length === 0) return { behind: [], ahead: [] };
  const [table] = await db.$queryRaw<Array<{ present: boolean }>>`SELECT to_regclass('public._prisma_migrations') IS NOT NULL AS present`;
  const applied = table?.present
    ? (await db.$queryRaw<Array<{ name: string }>>`SELECT migration_name AS name FROM "_prisma_migrations" WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL`).map((r) => r.name)
    : [];
  const done = new Set(applied);
  const ours = new Set(known);
  return { behind: known.filter((n) => !done.has(n)), ahead: applied.filter((n) => !ours.has(n)).sort() };
}
