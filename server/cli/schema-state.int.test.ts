import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { listMigrations } from "../db/migrate";
import { inProcessCli } from "../test/cli";
import { createTestDatabase, type TestDatabase } from "../test/db";

/**
 * The CLI never migrates (docs/operations.md, "Upgrades and migrations"): run from the next
 * version before a deploy, a command finds the schema behind it and says so — a reader
 * (`forecast --no-store`) reads on, a writer stops with what to run — and the schema of a newer
 * version is gone on with. Nothing the CLI does changes `_prisma_migrations`.
 */

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase(inject("adminUrl"), inject("templateDatabase"), inject("runPrefix"));
});
afterAll(() => t?.drop());

const cli = inProcessCli(() => t.db);
const newest = () => listMigrations().at(-1)!.name;
const applied = async () => (await t.db.$queryRaw<Array<{ name: string }>>`SELECT migration_name AS name FROM "_prisma_migrations" ORDER BY 1`).map((r) => r.name);

describe("a schema behind this version (the next version's CLI before the deploy migrated)", () => {
  it("a writer stops with what to run; forecast --no-store reads on and stores nothing; nothing is migrated", async () => {
    await t.db.$executeRaw`DELETE FROM "_prisma_migrations" WHERE migration_name = ${newest()}`;
    const before = await applied();

    const submit = await cli("run", "submit", "--company", "co-a", "--task", "t-behind", "--agent", "demo");
    expect(submit.code).toBe(1);
    expect(submit.err).toBe(`runwarden run: the database's schema is 1 migration(s) behind this version (first missing: ${newest()}): run npm run db:migrate first (or start a controller of this version)\n`);
    expect(await t.db.run.count()).toBe(0);

    const forecast = await cli("forecast", "--no-store");
    expect(forecast.code).toBe(0);
    expect(forecast.err).toContain(`the database's schema is 1 migration(s) behind this version (first missing: ${newest()}); reading it as it is`);
    expect(forecast.out).toContain("not stored (--no-store)");
    expect(await t.db.forecast.count()).toBe(0);
    expect(await t.db.auditEntry.count({ where: { action: "forecast.take" } })).toBe(0);

    // A forecast that stores is a writer.
    expect((await cli("forecast")).code).toBe(1);
    expect(await applied()).toEqual(before);
  });
});

describe("a schema ahead of this version (a newer version migrated)", () => {
  it("is said, and the command goes on", async () => {
    await t.db.$executeRaw`INSERT INTO "_prisma_migrations" (id, checksum, finished_at, migration_name, started_at, applied_steps_count)
      SELECT gen_random_uuid()::text, 'x', now(), name, now(), 1 FROM (VALUES (${newest()}), ('29990101000000_from_the_next_version')) AS m(name)
      WHERE NOT EXISTS (SELECT 1 FROM "_prisma_migrations" p WHERE p.migration_name = m.name)`;
    const submit = await cli("run", "submit", "--company", "co-a", "--task", "t-ahead", "--agent", "demo");
    expect(submit.err).toBe("runwarden run: the database has 1 migration(s) this version does not know (a newer version applied 29990101000000_from_the_next_version); going on\n");
    expect(submit.code).toBe(0);
    expect(await t.db.run.count({ where: { taskId: "t-ahead" } })).toBe(1);
  });
});
