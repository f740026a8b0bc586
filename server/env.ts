import { z } from "zod";

/**
 * The one reader of `process.env` (enforced by eslint). Everything else imports `env`
 * or calls `readEnv` with an explicit environment (child-process launchers).
 */
const schema = z.object({
  NODE_ENV: z.enum(["development", "production", "test"]).default("development"),
  /** With it, Runwarden uses that server; without it, an embedded PostgreSQL under the data dir. */
  DATABASE_URL: z
    .string()
    .trim()
    .min(1)
    .refine((v) => /^postgres(ql)?:\/\//.test(v), "must start with postgres:// or postgresql://")
    .optional(),
  PORT: z.coerce.number().int().min(1).max(65535).default(3000),
  HOSTNAME: z.string().default("0.0.0.0"),
  RUNWARDEN_DATA_DIR: z.string().default(".data"),
  RUNWARDEN_PG_PORT: z.coerce.number().int().min(1).max(65535).default(54329),
  RUNWARDEN_INSTANCE_ID: z.string().min(1).default("inst-local"),
  LOG_LEVEL: z.enum(["trace", "debug", "info", "warn", "error", "fatal", "silent"]).default("info"),
  /** Path to a chromium binary for Playwright; found automatically when unset. */
  CHROMIUM_PATH: z.string().optional(),
});

export type Env = z.infer<typeof schema>;

export function readEnv(source: Record<string, string | undefined>): Env {
  // Treat empty strings as unset, the way shells usually mean them.
  const cleaned = Object.fromEntries(Object.entries(source).filter(([, v]) => v !== undefined && v !== ""));
  const parsed = schema.safeParse(cleaned);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.join(".") ?? "environment";
    throw new Error(`invalid environment variable ${where}: ${issue?.message ?? "invalid"}`);
  }
  return parsed.data;
}

function load(): Env {
  try {
    return readEnv(process.env);
  } catch (err) {
    // In a command-line process a bad variable is one line and exit 2, not a stack trace;
    // inside Next.js the error propagates to its own error handling.
    if (!process.env.NEXT_RUNTIME) {
      process.stderr.write(`runwarden: ${(err as Error).message}\n`);
      process.exit(2);
    }
    throw err;
  }
}

export const env: Env = load();

/** The environment to hand to a child process, with overrides. */
export function childEnv(overrides: Record<string, string | undefined>): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = { ...process.env };
  for (const [k, v] of Object.entries(overrides)) {
    if (v === undefined) delete out[k];
    else out[k] = v;
  }
  return out;
}
