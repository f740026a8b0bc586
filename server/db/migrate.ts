import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import pg from "pg";

/**
 * Applies `prisma/migrations/<name>/migration.sql` in name order, recording them in
 * Prisma's own `_prisma_migrations` table, so `prisma migrate deploy` on a machine with
 * internet sees the same history. Two processes starting at once serialise on the same
 * advisory lock key Prisma's engine uses.
 */

export const MIGRATIONS_DIR = path.resolve("prisma/migrations");
const PRISMA_ADVISORY_LOCK = 72707369;

export interface MigrationFile {
  name: string;
  sql: string;
  checksum: string;
  /** Marked `-- runwarden:no-transaction` on its first line: run outside a transaction, one statement at a time (its `SET`s, then e.g. CREATE INDEX CONCURRENTLY). */
  noTransaction: boolean;
}

/** The first-line marker of a migration that must run outside a transaction (docs/operations.md, "Upgrades and migrations"). */
export const NO_TRANSACTION_MARKER = "-- runwarden:no-transaction";

export class MigrationError extends Error {
  override name = "MigrationError";
}

export function listMigrations(dir = MIGRATIONS_DIR): MigrationFile[] {
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .filter((d) => d.isDirectory() && fs.existsSync(path.join(dir, d.name, "migration.sql")))
    .map((d) => d.name)
    .sort()
    .map((name) => {
      const sql = fs.readFileSync(path.join(dir, name, "migration.sql"), "utf8");
      return { name, sql, checksum: crypto.createHash("sha256").update(sql).digest("hex"), noTransaction: sql.split("\n", 1)[0]?.trim() === NO_TRANSACTION_MARKER };
    });
}

export interface MigrateResult {
  applied: string[];
  alreadyApplied: number;
}

export async function migrate(url: string, options: { dir?: string; log?: (line: string) => void } = {}): Promise<MigrateResult> {
  const log = options.log ?? (() => {});
  const migrations = listMigrations(options.dir);
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  client.on("error", () => {});
  await client.connect();
  try {
    await client.query("SELECT pg_advisory_lock($1)", [PRISMA_ADVISORY_LOCK]);
    try {
      await client.query(`CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
        "id" VARCHAR(36) PRIMARY KEY NOT NULL,
        "checksum" VARCHAR(64) NOT NULL,
        "finished_at" TIMESTAMPTZ,
        "migration_name" VARCHAR(255) NOT NULL,
        "logs" TEXT,
        "rolled_back_at" TIMESTAMPTZ,
        "started_at" TIMESTAMPTZ NOT NULL DEFAULT now(),
        "applied_steps_count" INTEGER NOT NULL DEFAULT 0
      )`);
      const { rows } = await client.query<{ migration_name: string; checksum: string; finished_at: Date | null }>(
        `SELECT migration_name, checksum, finished_at FROM "_prisma_migrations" WHERE rolled_back_at IS NULL`,
      );
      const failed = rows.find((r) => r.finished_at === null);
      if (failed) {
        throw new MigrationError(
          `migration ${failed.migration_name} failed earlier and was never finished; repair the database, then mark it rolled back`,
        );
      }
      const done = new Map(rows.map((r) => [r.migration_name, r.checksum]));
      const applied: string[] = [];
      for (const m of migrations) {
        const known = done.get(m.name);
        if (known !== undefined) {
          if (known !== m.checksum) log(`warning: migration ${m.name} was edited after it was applied`);
          continue;
        }
        const id = crypto.randomUUID();
        if (m.noTransaction) {
          // Recorded as started first: one that fails half-way (an index left INVALID) stops every
          // later start, as a failed migration does, until it is repaired (docs/operations.md).
          await client.query(`INSERT INTO "_prisma_migrations" (id, checksum, migration_name, started_at, applied_steps_count) VALUES ($1, $2, $3, now(), 0)`, [id, m.checksum, m.name]);
          try {
            // One statement each: several in one query would share an implicit transaction.
            for (const statement of splitStatements(m.sql)) await client.query(statement);
          } catch (err) {
            await client.query(`UPDATE "_prisma_migrations" SET logs = $2 WHERE id = $1`, [id, (err as Error).message]).catch(() => {});
            throw new MigrationError(`migration ${m.name} failed outside a transaction: ${(err as Error).message}; repair the database, then mark it rolled back`);
          }
          await client.query(`UPDATE "_prisma_migrations" SET finished_at = now(), applied_steps_count = 1 WHERE id = $1`, [id]);
          applied.push(m.name);
          log(`applied migration ${m.name} (outside a transaction)`);
          continue;
        }
        try {
          await client.query("BEGIN");
          await client.query(m.sql);
          await client.query(
            `INSERT INTO "_prisma_migrations" (id, checksum, finished_at, migration_name, started_at, applied_steps_count)
             VALUES ($1, $2, now(), $3, now(), 1)`,
            [id, m.checksum, m.name],
          );
          await client.query("COMMIT");
        } catch (err) {
          await client.query("ROLLBACK").catch(() => {});
          throw new MigrationError(`migration ${m.name} failed: ${(err as Error).message}`);
        }
        applied.push(m.name);
        log(`applied migration ${m.name}`);
      }
      return { applied, alreadyApplied: done.size };
    } finally {
      await client.query("SELECT pg_advisory_unlock($1)", [PRISMA_ADVISORY_LOCK]).catch(() => {});
    }
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * A no-transaction migration's statements (its `SET`s, then the one statement it exists for):
 * split at each `;` ending a line, comments dropped. Only such migrations are split; they hold
 * nothing with a `;` inside a line (scripts/lib/migration-lint.ts holds them to one statement
 * besides `SET`s).
 */
export function splitStatements(sql: string): string[] {
  return sql
    .split("\n")
    .map((l) => l.replace(/--.*$/, ""))
    .join("\n")
    .split(/;\s*(?:\n|$)/)
    .map((s) => s.trim())
    .filter((s) => s !== "");
}

/**
 * The schema the newest migration was made from, or null before the first one. Only the newest
 * snapshot is kept (docs/decisions/0001-newest-schema-snapshot-only.md): the walk back is for a
 * checkout where a newer migration has none yet.
 */
export function latestSnapshot(dir = MIGRATIONS_DIR): string | null {
  const all = listMigrations(dir);
  for (const m of all.reverse()) {
    const p = path.join(dir, m.name, "schema.prisma.snapshot");
    if (fs.existsSync(p)) return fs.readFileSync(p, "utf8");
  }
  if (all.length > 0) throw new Error("migrations exist but none keeps its schema.prisma.snapshot");
  return null;
}
