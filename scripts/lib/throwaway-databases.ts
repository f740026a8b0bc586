import { openDatabase } from "../../server/db/embedded";
import { withDatabase } from "../../server/db/url";
import { env } from "../../server/env";
import { admin } from "./admin";

/**
 * A benchmark's throwaway databases on this checkout's PostgreSQL (the embedded one, or
 * DATABASE_URL's server): each named `<prefix>_<stamp>_<tag>`, so two benches never share one,
 * and dropped together at the end.
 */
export async function throwawayDatabases(prefix: string) {
  const server = await openDatabase({ env, database: "postgres" });
  const stamp = `${prefix}_${Date.now().toString(36)}`;
  const made: string[] = [];
  return {
    server,
    /** The names made so far (a failed bench may keep them for inspection). */
    made,
    /** A new empty database; its URL. */
    async create(tag: string): Promise<string> {
      const name = `${stamp}_${tag}`;
      await admin(server.adminUrl, `CREATE DATABASE ${name}`);
      made.push(name);
      return withDatabase(server.adminUrl, name);
    },
    /** Drops every database made (errors ignored: a bench's end must not hide its figures). */
    async dropAll(): Promise<void> {
      for (const name of made) await admin(server.adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
    },
  };
}
