import { openDatabase, type DatabaseHandle } from "../db/embedded";
import { withDatabase } from "../db/url";
import type { Env } from "../env";

/** How the emulator and its clients read their settings from the environment (server/env.ts). */

export function emulatorUrl(env: Pick<Env, "EMULATOR_URL" | "EMULATOR_PORT">): string {
  return (env.EMULATOR_URL ?? `http://127.0.0.1:${env.EMULATOR_PORT}`).replace(/\/+$/, "");
}

/** EMULATOR_API_KEY may list several keys, comma-separated; clients send the first. */
export function emulatorApiKeys(env: Pick<Env, "EMULATOR_API_KEY">): string[] {
  const keys = env.EMULATOR_API_KEY.split(",").map((k) => k.trim()).filter(Boolean);
  return keys.length ? keys : ["emulator-key"];
}

/**
 * The emulator's own database: EMULATOR_DATABASE on DATABASE_URL's server when that is
 * set, otherwise on the embedded PostgreSQL. Never the application's database itself.
 */
export function openEmulatorDatabase(env: Env, log?: (line: string) => void): Promise<DatabaseHandle> {
  if (env.DATABASE_URL) {
    return openDatabase({ env: { ...env, DATABASE_URL: withDatabase(env.DATABASE_URL, env.EMULATOR_DATABASE) }, log });
  }
  return openDatabase({ env, log, database: env.EMULATOR_DATABASE });
}
