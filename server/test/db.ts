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
