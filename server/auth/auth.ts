import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { betterAuth } from "better-auth";
import { prismaAdapter } from "better-auth/adapters/prisma";
import { APIError } from "better-auth/api";
import type { Db } from "../db/client";
import { env } from "../env";

/**
 * Sign-in with better-auth: email and password, sessions in PostgreSQL (the `sessions`
 * table), secure HTTP-only cookies, and sign-in rate limiting stored in the database so
 * every dashboard process shares it. Nobody signs up: people are added by an admin or
 * `runwarden user add`.
 */

export function publicUrl(): string {
  return (env.RUNWARDEN_PUBLIC_URL ?? `http://localhost:${env.PORT}`).replace(/\/+$/, "");
}

/** The origins a browser may send mutations from (the dashboard itself). */
export function trustedOrigins(): string[] {
  const origins = new Set([new URL(publicUrl()).origin, `http://localhost:${env.PORT}`, `http://127.0.0.1:${env.PORT}`]);
  return [...origins];
}

/** The secret per file, read once per process (as better-auth reads its own once). */
const secrets = new Map<string, string>();

/**
 * BETTER_AUTH_SECRET, or one generated once and kept (mode 600) in the data dir. Every list
 * cursor is signed with it: read from the file on each call, it cost a deep `runs.list` page
 * three blocking file reads.
 */
export function authSecret(): string {
  if (env.BETTER_AUTH_SECRET) return env.BETTER_AUTH_SECRET;
  const file = path.resolve(env.RUNWARDEN_DATA_DIR, "auth-secret");
  let secret = secrets.get(file);
  if (secret === undefined) {
    secret = readOrCreateSecret(file);
    secrets.set(file, secret);
  }
  return secret;
}

function readOrCreateSecret(file: string): string {
  try {
    return fs.readFileSync(file, "utf8").trim();
  } catch {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const secret = crypto.randomBytes(32).toString("base64url");
    try {
      fs.writeFileSync(file, secret, { mode: 0o600, flag: "wx" });
      return secret;
    } catch {
      // Another process wrote it first.
      return fs.readFileSync(file, "utf8").trim();
    }
  }
}

/**
 * Sign-in back-off (server/auth/handler.ts): `free` attempts per key, then each waits
 * 2^(n-free) s after the previous, at most `maxMs`; a key quiet for `resetMs` starts over.
 */
export const SIGN_IN_BACKOFF = { free: 5, maxMs: 15 * 60_000, resetMs: 60 * 60_000 };

export function createAuth(db: Db) {
  return betterAuth({
    appName: "Runwarden",
    database: prismaAdapter(db, { provider: "postgresql" }),
    secret: authSecret(),
    baseURL: publicUrl(),
    basePath: "/api/auth",
    trustedOrigins: trustedOrigins(),
    emailAndPassword: { enabled: true, disableSignUp: true, minPasswordLength: 10, autoSignIn: false },
    user: {
      additionalFields: {
        role: { type: "string", required: false, defaultValue: "viewer", input: false },
        companies: { type: "string[]", required: false, defaultValue: [], input: false },
        disabledAt: { type: "date", required: false, input: false },
      },
    },
    databaseHooks: {
      session: {
        create: {
          // A disabled person (server/auth/people.ts) gets no session, whatever their password.
          async before(session) {
            const user = await db.user.findUnique({ where: { id: session.userId }, select: { disabledAt: true } });
            if (user?.disabledAt) throw new APIError("FORBIDDEN", { code: "ACCOUNT_DISABLED", message: "this account is disabled; ask an admin to enable it" });
          },
        },
      },
    },
    session: { expiresIn: 60 * 60 * 24 * 7, updateAge: 60 * 60 * 24 },
    rateLimit: {
      enabled: true,
      storage: "database",
      window: 60,
      max: 300,
      // Sign-in is throttled in front of better-auth (handler.ts), per account, address and device.
      customRules: { "/sign-in/email": false },
    },
    advanced: {
      cookiePrefix: "runwarden",
      useSecureCookies: publicUrl().startsWith("https://"),
      defaultCookieAttributes: { sameSite: "lax", httpOnly: true },
    },
    telemetry: { enabled: false },
    // better-auth logs failed sign-ins by email only; no password or secret reaches a log.
    logger: { level: "warn" },
  });
}

export type Auth = ReturnType<typeof createAuth>;

const cache = new WeakMap<Db, Auth>();
export function authFor(db: Db): Auth {
  let auth = cache.get(db);
  if (!auth) {
    auth = createAuth(db);
    cache.set(db, auth);
  }
  return auth;
}
