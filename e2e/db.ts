import { createDb, type Db } from "../server/db/client";
import { env } from "../server/env";

/** The database the e2e server runs on (resolved by playwright.config.ts). */
export function e2eDb(): Db {
  if (!env.E2E_DATABASE_URL) throw new Error("E2E_DATABASE_URL is not set; run the browser tests through npm test");
  return createDb(env.E2E_DATABASE_URL, { max: 2 });
}
