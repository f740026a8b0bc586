import fs from "node:fs";
import path from "node:path";
import pg from "pg";
import { afterAll, describe, expect, inject, it } from "vitest";
import { dropDatabasesWithPrefix } from "../test/db";
import { latestSnapshot, listMigrations, migrate, MigrationError } from "./migrate";
import { diffDatamodels, isEmptyMigration } from "./schema-engine";
import { withDatabase } from "./url";
import { tempDirs } from "../test/temp";

const migrationsDir = tempDirs("rw-mig-");

const adminUrl = inject("adminUrl");
const prefix = `${inject("runPrefix")}_mig`;
let counter = 0;

async function emptyDatabase(): Promise<string> {
  const name = `${prefix}_${counter++}`;
  const c = new pg.Client({ connectionString: adminUrl });
  await c.connect();
  await c.query(`CREATE DATABASE ${name}`);
  await c.end();
  return withDatabase(adminUrl, name);
}

async function query<T extends pg.QueryResultRow>(url: string, sql: string): Promise<T[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query<T>(sql)).rows;
  } finally {
    await c.end();
  }
}

afterAll(() => dropDatabasesWithPrefix(adminUrl, prefix));

describe("migrate", () => {
  it("applies every migration once and records it the way Prisma does", async () => {
    const url = await emptyDatabase();
    const files = listMigrations();
    expect(files.length).toBeGreaterThan(0);

    const first = await migrate(url);
    expect(first.applied).toEqual(files.map((f) => f.name));
    const second = await migrate(url);
    expect(second.applied).toEqual([]);
    expect(second.alreadyApplied).toBe(files.length);

    const rows = await query<{ migration_name: string; checksum: string; finished_at: Date | null }>(
      url,
      `SELECT migration_name, checksum, finished_at FROM "_prisma_migrations" ORDER BY migration_name`,
    );
    expect(rows.map((r) => [r.migration_name, r.checksum])).toEqual(files.map((f) => [f.name, f.checksum]));
    expect(rows.every((r) => r.finished_at !== null)).toBe(true);
  });

  it("applies once when several processes start at the same moment", async () => {
    const url = await emptyDatabase();
    const results = await Promise.all(Array.from({ length: 6 }, () => migrate(url)));
    const applied = results.flatMap((r) => r.applied);
    expect(applied).toEqual(listMigrations().map((f) => f.name));
    const [{ n }] = (await query<{ n: string }>(url, `SELECT count(*) AS n FROM "_prisma_migrations"`)) as [{ n: string }];
    expect(Number(n)).toBe(listMigrations().length);
  });

  it("stops at a broken migration, names it, and leaves nothing half-applied", async () => {
    const url = await emptyDatabase();
    const dir = migrationsDir();
    fs.mkdirSync(path.join(dir, "001_ok"));
    fs.writeFileSync(path.join(dir, "001_ok", "migration.sql"), "CREATE TABLE ok_table (id int);");
    fs.mkdirSync(path.join(dir, "002_broken"));
    fs.writeFileSync(path.join(dir, "002_broken", "migration.sql"), "CREATE TABLE half (id int);\nCREATE TABLE oops (id nosuchtype);");

    const err = await migrate(url, { dir }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MigrationError);
    expect((err as Error).message).toMatch(/002_broken failed: .*nosuchtype/);
    const tables = await query<{ tablename: string }>(url, `SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1`);
    expect(tables.map((t) => t.tablename)).toEqual(["_prisma_migrations", "ok_table"]);
  });
});

describe("a migration outside a transaction (-- runwarden:no-transaction)", () => {
  it("builds an index concurrently, its SETs first; a later one that fails stops the next start until repaired", async () => {
    const url = await emptyDatabase();
    const dir = migrationsDir();
    const write = (name: string, sql: string) => {
      fs.mkdirSync(path.join(dir, name));
      fs.writeFileSync(path.join(dir, name, "migration.sql"), sql);
    };
    write("001_table", "CREATE TABLE t (id int, note text);");
    write("002_index", "-- runwarden:no-transaction\nSET lock_timeout = '5s';\nCREATE INDEX CONCURRENTLY t_note_idx ON t (note);\n");
    expect((await migrate(url, { dir })).applied).toEqual(["001_table", "002_index"]);
    const [idx] = await query<{ valid: boolean }>(url, `SELECT indisvalid AS valid FROM pg_index WHERE indexrelid = 't_note_idx'::regclass`);
    expect(idx?.valid).toBe(true);

    // A unique index over duplicates fails half-way, leaving an INVALID index: recorded, never finished.
    await query(url, "INSERT INTO t VALUES (1, 'a'), (2, 'a')");
    write("003_unique", "-- runwarden:no-transaction\nCREATE UNIQUE INDEX CONCURRENTLY t_note_key ON t (note);\n");
    await expect(migrate(url, { dir })).rejects.toThrow(/003_unique failed outside a transaction: .*repair the database/);
    await expect(migrate(url, { dir })).rejects.toThrow(/migration 003_unique failed earlier and was never finished/);
  });
});

describe("schema.prisma", () => {
  it("has no changes that lack a migration (run npm run db:migrate:create -- NAME)", async () => {
    const current = fs.readFileSync("prisma/schema.prisma", "utf8");
    const sql = await diffDatamodels(adminUrl, latestSnapshot(), current);
    expect(isEmptyMigration(sql) ? "" : sql).toBe("");
  });

  it("diffs to a non-empty migration when the schema changes", async () => {
    const current = fs.readFileSync("prisma/schema.prisma", "utf8");
    const changed = current.replace("model Instance {", "model Instance {\n  extraColumn String?");
    const sql = await diffDatamodels(adminUrl, latestSnapshot(), changed);
    expect(sql).toMatch(/ALTER TABLE "instances" ADD COLUMN\s+"extraColumn" TEXT/);
  });
});
