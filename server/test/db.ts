import crypto from "node:crypto";
import pg from "pg";
import { createDb, type Db } from "../db/client";
import { withDatabase } from "../db/url";

/** A throwaway, migrated database for one test file. */
export interface TestDatabase {
  name: string;
  url: string;
  db: Db;
  drop(): Promise<void>;
}

export async function createTestDatabase(adminUrl: string, template: string, prefix: string): Promise<TestDatabase> {
  const name = `${prefix}_${crypto.randomBytes(4).toString("hex")}`;
  await withAdmin(adminUrl, async (client) => {
    for (let attempt = 0; ; attempt++) {
      try {
        await client.query(`CREATE DATABASE ${pg.escapeIdentifier(name)} TEMPLATE ${pg.escapeIdentifier(template)}`);
        return;
      } catch (err) {
        // 55006: the template is briefly in use by another copy; try again.
        if ((err as { code?: string }).code !== "55006" || attempt > 20) throw err;
        await new Promise((r) => setTimeout(r, 100 + attempt * 50));
      }
    }
  });
  const url = withDatabase(adminUrl, name);
  const db = createDb(url, { max: 20 });
  return {
    name,
    url,
    db,
    async drop() {
      await db.$disconnect();
      await withAdmin(adminUrl, (c) => c.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`));
    },
  };
}

export async function dropDatabasesWithPrefix(adminUrl: string, prefix: string): Promise<void> {
  await withAdmin(adminUrl, async (client) => {
    const { rows } = await client.query<{ datname: string }>("SELECT datname FROM pg_database WHERE datname LIKE $1", [`${prefix}%`]);
    for (const { datname } of rows) {
      await client.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(datname)} WITH (FORCE)`);
    }
  });
}

/** Runs `fn` with a connection to the server's maintenance database. */
export async function withAdmin<T>(adminUrl: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: adminUrl });
  client.on("error", () => {});
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * Every committed pending-cleanup state of a lease, written by a trigger in the writer's own
 * transaction: a lease that was ever pending_cleanup without a claim is one another sweep
 * could take. `seen` reads the states of the leases `where` picks (SQL over `l`, the leases).
 */
export async function recordPendingCleanupStates(db: Db): Promise<{ seen(where: string, ...params: unknown[]): Promise<Array<{ claimed: boolean }>>; stop(): Promise<void> }> {
  await db.$executeRawUnsafe(`CREATE TABLE IF NOT EXISTS lease_states_seen (lease_id uuid, claimed boolean)`);
  await db.$executeRawUnsafe(`CREATE OR REPLACE FUNCTION note_lease_state() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.status = 'pending_cleanup' THEN INSERT INTO lease_states_seen VALUES (NEW.id, NEW.claim_attempt_id IS NOT NULL); END IF;
      RETURN NEW;
    END $$`);
  await db.$executeRawUnsafe(`CREATE OR REPLACE TRIGGER note_lease_state AFTER INSERT OR UPDATE ON environment_leases FOR EACH ROW EXECUTE FUNCTION note_lease_state()`);
  return {
    seen: (where, ...params) => db.$queryRawUnsafe<Array<{ claimed: boolean }>>(`SELECT s.claimed FROM lease_states_seen s JOIN environment_leases l ON l.id = s.lease_id WHERE ${where}`, ...params),
    async stop() {
      await db.$executeRawUnsafe(`DROP TRIGGER IF EXISTS note_lease_state ON environment_leases`);
      await db.$executeRawUnsafe(`DROP TABLE IF EXISTS lease_states_seen`);
    },
  };
}
