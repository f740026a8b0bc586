import type { TestProject } from "vitest/node";
import { openDatabase } from "../db/embedded";
import { migrate } from "../db/migrate";
import { withDatabase } from "../db/url";
import { env } from "../env";
import { dropDatabasesWithPrefix } from "./db";

/**
 * One PostgreSQL server for the whole run (embedded, or DATABASE_URL's server) and one
 * migrated template database; each integration test file copies the template into a
 * throwaway database of its own. Everything made here is dropped at the end.
 */

declare module "vitest" {
  export interface ProvidedContext {
    adminUrl: string;
    templateDatabase: string;
    runPrefix: string;
  }
}

export default async function setup(project: TestProject) {
  // Each Vitest project that needs a database runs this: its name keeps their databases apart.
  const runPrefix = `rwt_${Date.now().toString(36)}_${process.pid}_${project.name.replace(/[^a-z0-9]/gi, "").toLowerCase()}`;
  const templateDatabase = `${runPrefix}_tmpl`;
  // With DATABASE_URL the template lives on that server too, never in the database it names.
  const db = await openDatabase({ env: env.DATABASE_URL ? { ...env, DATABASE_URL: withDatabase(env.DATABASE_URL, templateDatabase) } : env, database: templateDatabase });
  await migrate(db.url);
  project.provide("adminUrl", db.adminUrl);
  project.provide("templateDatabase", templateDatabase);
  project.provide("runPrefix", runPrefix);

  return async () => {
    await dropDatabasesWithPrefix(db.adminUrl, runPrefix);
    if (db.startedHere) await db.stop();
  };
}
