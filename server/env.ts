import path from "node:path";
import { z } from "zod";
import { parseAllowNetworks } from "./alerts/destinations";
import { checkSecret } from "./alerts/sign";
import { settleFloorMs } from "./lib/settle";

export { settleFloorMs };

/**
 * The one reader of `process.env` (enforced by eslint). Everything else imports `env`
 * or calls `readEnv` with an explicit environment (child-process launchers).
 */
const envSchema = z.object({
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
  /**
   * The embedded PostgreSQL's port. Unset: 54329, or a free port when another server holds
   * it (kept in `<data dir>/pg.port`); set: exactly this one.
   */
  RUNWARDEN_PG_PORT: z.coerce.number().int().min(1).max(65535).optional(),
  /**
   * This installation's instance id (sandbox labels, ownership). Unset: generated once per
   * database and kept (the `installation` table), so two installations never share one.
   */
  RUNWARDEN_INSTANCE_ID: z.string().trim().min(1).optional(),
  LOG_LEVEL: z.enum(["trace", "debug", "info", "warn", "error", "fatal", "silent"]).default("info"),
  /** The controller's local state (local restart proofs); K15 chaos wipes it. Unset: `<data dir>/controller`. */
  RUNWARDEN_CONTROLLER_HOME: z.string().optional(),
  /** Runs one controller executes at once. */
  RUNWARDEN_CONCURRENCY: z.coerce.number().int().min(1).max(256).default(4),
  /**
   * The controller's database connections at most, whatever its concurrency: a run holds one
   * only for a statement or a short transaction, never while it waits on the provider or a
   * turn, and a transaction waits for a free one (up to 30 s) rather than failing.
   */
  RUNWARDEN_DB_POOL_MAX: z.coerce.number().int().min(2).max(200).default(12),
  /** How often the controller looks for queued runs and interrupted ones. */
  RUNWARDEN_POLL_MS: z.coerce.number().int().min(20).default(500),
  /** How often the sweeps run (docs/rules.md §2.5, §2.6). */
  RUNWARDEN_SWEEP_INTERVAL_MS: z.coerce.number().int().min(100).default(10_000),
  /**
   * Due rows a sweep acts on at once (judged under the row's lock, then torn down), across
   * pages. A batch of 4 holds a database connection while the provider answers (judged under
   * its rows' locks): lanes / 4 of the pool's connections at most.
   */
  RUNWARDEN_SWEEP_LANES: z.coerce.number().int().min(1).max(64).default(16),
  /** A pending creation intent is left alone this long unless its creator exited (§2.5). */
  RUNWARDEN_INTENT_WAIT_MS: z.coerce.number().int().min(0).default(30 * 60_000),
  /**
   * Until this long after creation, a sandbox not found may still materialise (§2.5). Never
   * below the create timeout plus a margin (`settleFloorMs`); unset: 2 min or that floor.
   */
  RUNWARDEN_SETTLE_MS: z.coerce.number().int().min(0).optional(),
  /** A teardown claim fences other sweeps this long (§2.6). */
  RUNWARDEN_FENCE_MS: z.coerce.number().int().min(1000).default(15 * 60_000),
  /** Delay before a retryable startup failure runs again (§2.3). */
  RUNWARDEN_RETRY_DELAY_MS: z.coerce.number().int().min(0).default(30_000),
  /** Simulated work per agent turn. */
  RUNWARDEN_TURN_MS: z.coerce.number().int().min(0).default(500),
  /**
   * A turn's budget (docs/rules.md, "Turns"): past it the runner kills the agent's process group and
   * the run ends with `agent_turn_timeout` (a hung agent would keep its paid sandbox awake for
   * ever). The controller stops waiting for the runner's record 30 s after it.
   */
  RUNWARDEN_TURN_TIMEOUT_MS: z.coerce.number().int().min(1_000).max(24 * 60 * 60_000).default(30 * 60_000),
  /**
   * How long a drain waits for a turn in flight: past it the run is suspended where it stands
   * (the runner goes on and records the turn; the next controller reattaches) and the drain
   * completes.
   */
  RUNWARDEN_DRAIN_TIMEOUT_MS: z.coerce.number().int().min(0).max(10 * 60_000).default(20_000),
  /** Bound on session.open before it counts as an interruption. */
  RUNWARDEN_SESSION_OPEN_TIMEOUT_MS: z.coerce.number().int().min(100).default(5_000),
  /**
   * Bound on a provider create; past it the controller looks the sandbox up by its exact name,
   * and the sweep takes over what it does not find. Above Daytona's own 30 s server-side wait
   * for `started` (sandbox.controller.ts), so a slow start is not taken for a lost create.
   */
  RUNWARDEN_CREATE_TIMEOUT_MS: z.coerce.number().int().min(100).default(45_000),
  /** The snapshot sandboxes are created from (the provider's default when unset); it needs Node.js 18+ for the runner. */
  RUNWARDEN_SANDBOX_SNAPSHOT: z.string().trim().min(1).optional(),
  /** A controller silent this long no longer holds its runs (other hosts cannot be probed). */
  RUNWARDEN_EXECUTOR_TIMEOUT_MS: z.coerce.number().int().min(500).default(20_000),
  /** A live run older than this is listed as stuck (docs/rules.md §4; the overview's "Stuck runs", `/runs?stuck=over_age`). */
  RUNWARDEN_STUCK_MAX_AGE_MS: z.coerce.number().int().min(60_000).default(12 * 3600_000),
  /**
   * A turn running longer than this is listed as stuck (or past its run's own larger budget plus
   * 2 min). Unset: RUNWARDEN_TURN_TIMEOUT_MS plus 2 min, past which the runner and the
   * controller have both given up on it.
   */
  RUNWARDEN_STUCK_MAX_TURN_MS: z.coerce.number().int().min(1_000).optional(),
  /**
   * The sandbox's own idle policy (docs/rules.md §4), minutes, sent on create as Daytona's
   * `autoStopInterval`: unset, the run's turn budget plus the deadline margin, rounded up, plus 5;
   * a shorter value is raised to that, so a turn nobody watches is never stopped mid-way.
   */
  RUNWARDEN_SANDBOX_AUTO_STOP_MINUTES: z.coerce.number().int().min(1).max(30 * 24 * 60).optional(),
  /**
   * Minutes a stopped sandbox is kept before the provider deletes it (Daytona's
   * `autoDeleteInterval`): -1 never; otherwise at least 60, so recovery of a suspended run still
   * finds its sandbox (0, delete at stop, is refused).
   */
  RUNWARDEN_SANDBOX_AUTO_DELETE_MINUTES: z.coerce
    .number()
    .int()
    .refine((v) => v === -1 || (v >= 60 && v <= 365 * 24 * 60), "must be -1 (never) or 60 to 525600 minutes: a shorter interval deletes the sandbox a suspended run is recovered from")
    .default(24 * 60),
  /** Recovery attempts that may throw before a run ends with `native_recovery_attempts_exhausted` (§2.8). */
  RUNWARDEN_RECOVERY_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(100).default(5),
  /** The first back-off after a failed recovery attempt; it doubles each attempt, capped at 300 s. */
  RUNWARDEN_RECOVERY_BACKOFF_MS: z.coerce.number().int().min(0).default(2_000),
  /**
   * While the provider is unavailable (§2.8), the controller probes it after this long, then
   * twice as long each time up to RUNWARDEN_BREAKER_PROBE_CAP_MS (at least its Retry-After).
   */
  RUNWARDEN_BREAKER_PROBE_MS: z.coerce.number().int().min(10).default(1_000),
  RUNWARDEN_BREAKER_PROBE_CAP_MS: z.coerce.number().int().min(10).default(30_000),
  /**
   * A 429 makes a run wait uncounted (§2.8) at most this many times in a row, for at most
   * RUNWARDEN_RATE_LIMIT_MAX_WAIT_MS since its first one; past either bound a 429 waits only
   * when a probe finds the provider unavailable too, else it is counted like any error.
   */
  RUNWARDEN_RATE_LIMIT_MAX_WAITS: z.coerce.number().int().min(0).max(1000).default(10),
  RUNWARDEN_RATE_LIMIT_MAX_WAIT_MS: z.coerce.number().int().min(0).default(10 * 60_000),
  /** `provider.outage_started` goes out once an outage has lasted this long and a probe confirmed it (docs/alerts.md). */
  RUNWARDEN_OUTAGE_ALERT_MIN_MS: z.coerce.number().int().min(0).max(24 * 3_600_000).default(30_000),
  /**
   * `npm start` restarts a controller (or the emulator) that died after this long, doubling
   * with each crash in a row (up to 30 s); after RUNWARDEN_RESTART_MAX_CRASHES crashes each
   * within a minute of its start it stops restarting it, loudly (§2.8).
   */
  RUNWARDEN_RESTART_BACKOFF_MS: z.coerce.number().int().min(10).default(1_000),
  RUNWARDEN_RESTART_MAX_CRASHES: z.coerce.number().int().min(1).max(100).default(5),
  /**
   * Chaos-wave tests only: a deliberately broken recovery rule, to prove the wave's checks
   * can fail. Never set in production.
   */
  RUNWARDEN_TEST_BREAK_RULE: z.enum(["staged_requires_resumed", "skip_creator_exit", "keep_lost_fences"]).optional(),
  /** Chaos and tests only: SIGKILL this controller at the named point (e.g. after_intent_commit). */
  RUNWARDEN_CRASH_AT: z.string().optional(),
  /** `off` skips the small chaos wave npm start runs on an empty database. */
  RUNWARDEN_FIRST_BOOT_WAVE: z.enum(["on", "off"]).default("on"),
  /**
   * Signs sessions. Unset, one is generated once and kept in the data dir; set it (the same
   * on every dashboard) when several machines serve one database.
   */
  BETTER_AUTH_SECRET: z.string().min(32, "must be at least 32 characters").optional(),
  /** A bearer token that lets a Prometheus scraper read /api/metrics without signing in. */
  RUNWARDEN_METRICS_TOKEN: z.string().min(16, "must be at least 16 characters").optional(),
  /** The address people reach the dashboard at (cookies and origin checks); default http://localhost:PORT. */
  RUNWARDEN_PUBLIC_URL: z.url().optional(),
  /**
   * Alerts (outgoing webhooks, README "Alerts"). With a URL, every controller upserts it at
   * start as the instance's `env` endpoint (every event type); the secret signs each delivery
   * (Standard Webhooks), generated and stored when unset.
   */
  RUNWARDEN_ALERT_WEBHOOK_URL: z.url().optional(),
  // Checked here as the signer will use it (alerts/sign.ts): a bad one stops the start, not the controller later.
  RUNWARDEN_ALERT_WEBHOOK_SECRET: z
    .string()
    .min(16, "at least 16 characters (as the alerts page asks)")
    .superRefine((secret, ctx) => {
      const problem = checkSecret(secret);
      if (problem) ctx.addIssue({ code: "custom", message: `not a signing secret the alerts can use: ${problem} (a value without the whsec_ prefix is used as its UTF-8 bytes)` });
    })
    .optional(),
  /**
   * Address ranges a console endpoint may be sent to although they are not public (loopback,
   * private, link-local…; docs/alerts.md "Where a webhook may go"), comma-separated CIDR or
   * single addresses: `10.0.0.0/8,192.168.1.20`. Unset: public addresses only.
   */
  RUNWARDEN_ALERT_ALLOW_NETWORKS: z
    .string()
    .transform((text, ctx) => {
      const parsed = parseAllowNetworks(text);
      if (parsed.ok) return parsed.networks;
      ctx.addIssue({ code: "custom", message: parsed.error });
      return z.NEVER;
    })
    .default([]),
  /** A failed delivery is tried again after this long, doubling (with jitter) up to the cap, until RUNWARDEN_ALERT_MAX_ATTEMPTS. */
  RUNWARDEN_ALERT_RETRY_BASE_MS: z.coerce.number().int().min(10).default(5_000),
  RUNWARDEN_ALERT_RETRY_CAP_MS: z.coerce.number().int().min(10).default(10 * 60_000),
  RUNWARDEN_ALERT_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(1000).default(20),
  /** Bound on one delivery request. */
  RUNWARDEN_ALERT_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(10_000),
  /** `orphans.cost_over` fires when the orphaned sandboxes' cost rate crosses this many USD per hour (unset: never). */
  RUNWARDEN_ALERT_ORPHAN_COST_PER_HOUR: z.coerce.number().positive().optional(),
  /** Requests one API token may make per minute (docs/api.md); past it, 429 with Retry-After. */
  RUNWARDEN_API_RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(1).max(1_000_000).default(600),
  /** The longest an API token may be made to last, in days (docs/api.md): every token expires. */
  RUNWARDEN_API_TOKEN_MAX_DAYS: z.coerce.number().int().min(1).max(3650).default(365),
  /** How long an idempotency key names its run (docs/api.md), in hours. */
  RUNWARDEN_API_IDEMPOTENCY_HOURS: z.coerce.number().int().min(1).max(24 * 30).default(24),
  /** The browser tests' dashboard port; their emulator listens on this + 700. */
  E2E_PORT: z.coerce.number().int().min(1).max(64000).default(3199),
  /** The database the browser tests' server uses (set by playwright.config.ts). */
  E2E_DATABASE_URL: z.string().optional(),
  /** Path to a chromium binary for Playwright; found automatically when unset. */
  CHROMIUM_PATH: z.string().optional(),
  /** Daytona's REST API (e.g. https://app.daytona.io/api); when unset, the local emulator is the provider. */
  DAYTONA_API_URL: z.url().optional(),
  DAYTONA_API_KEY: z.string().min(1).optional(),
  /** Bound on each provider request: the Daytona client sets none of its own. */
  DAYTONA_TIMEOUT_MS: z.coerce.number().int().min(100).default(30_000),
  /** Prefix of exact creation names, `<prefix>-create-<operationId>`. */
  RUNWARDEN_SANDBOX_PREFIX: z
    .string()
    .regex(/^[a-z0-9][a-z0-9-]{0,19}$/, "must be 1-20 lowercase letters, digits or dashes")
    .default("rw"),
  /** The provider emulator (`npm run emulator`), on loopback. */
  EMULATOR_PORT: z.coerce.number().int().min(0).max(65535).default(3901),
  /** How clients reach the emulator; defaults to http://127.0.0.1:<EMULATOR_PORT>. */
  EMULATOR_URL: z.url().optional(),
  /** Bearer keys the emulator accepts (comma-separated); the first is the one clients send. */
  EMULATOR_API_KEY: z.string().min(1).default("emulator-key"),
  /** The emulator's own database, on DATABASE_URL's server or the embedded one. */
  EMULATOR_DATABASE: z
    .string()
    .regex(/^[a-z_][a-z0-9_]{0,62}$/, "must be a lowercase PostgreSQL identifier")
    .default("runwarden_emulator"),
  /** What a create with a name already in use gets: 409 (`conflict`) or a second sandbox (`allow`). */
  EMULATOR_DUPLICATE_NAMES: z.enum(["conflict", "allow"]).default("conflict"),
  /** How long a deleted sandbox stays visible as `destroyed` before GET answers 404. */
  EMULATOR_DESTROYED_RETENTION_MS: z.coerce.number().int().min(0).default(0),
  /** How long each of the emulator's transitional states (creating, starting, stopping, destroying) lasts. */
  EMULATOR_TRANSITION_MS: z.coerce.number().int().min(0).default(150),
  /** How long one minute of a sandbox's `autoStopInterval` lasts in the emulator (Daytona: 60000). */
  EMULATOR_AUTO_STOP_MINUTE_MS: z.coerce.number().int().min(1).default(60_000),
});

const withDerived = envSchema
  .superRefine((e, ctx) => {
    // Found here, not when a controller first builds its provider: a start that cannot work
    // stops before anything runs, instead of a controller crashing until its supervisor gives up.
    if (e.DAYTONA_API_URL && !e.DAYTONA_API_KEY) {
      ctx.addIssue({ code: "custom", path: ["DAYTONA_API_KEY"], message: "is required when DAYTONA_API_URL is set (the key of the Daytona organisation the sandboxes are created in)" });
    }
    // A live creator waits up to the create timeout: a shorter wait reclaims its sandbox.
    if (e.RUNWARDEN_INTENT_WAIT_MS < e.RUNWARDEN_CREATE_TIMEOUT_MS) {
      ctx.addIssue({
        code: "custom",
        path: ["RUNWARDEN_INTENT_WAIT_MS"],
        message: `${e.RUNWARDEN_INTENT_WAIT_MS} ms is shorter than RUNWARDEN_CREATE_TIMEOUT_MS (${e.RUNWARDEN_CREATE_TIMEOUT_MS} ms): a creator still waiting on the provider would have its sandbox reclaimed; raise it or lower the create timeout`,
      });
    }
    const floor = settleFloorMs(e.RUNWARDEN_CREATE_TIMEOUT_MS);
    if (e.RUNWARDEN_SETTLE_MS !== undefined && e.RUNWARDEN_SETTLE_MS < floor) {
      ctx.addIssue({
        code: "custom",
        path: ["RUNWARDEN_SETTLE_MS"],
        message: `${e.RUNWARDEN_SETTLE_MS} ms is below the create timeout plus a margin (${floor} ms with RUNWARDEN_CREATE_TIMEOUT_MS=${e.RUNWARDEN_CREATE_TIMEOUT_MS}): a sandbox the provider materialises late would be leaked`,
      });
    }
  })
  .transform((e) => ({
  ...e,
  RUNWARDEN_SETTLE_MS: e.RUNWARDEN_SETTLE_MS ?? Math.max(2 * 60_000, settleFloorMs(e.RUNWARDEN_CREATE_TIMEOUT_MS)),
  RUNWARDEN_STUCK_MAX_TURN_MS: e.RUNWARDEN_STUCK_MAX_TURN_MS ?? e.RUNWARDEN_TURN_TIMEOUT_MS + 2 * 60_000,
  // Under the data dir, so a throwaway data dir leaves nothing in the checkout.
  RUNWARDEN_CONTROLLER_HOME: e.RUNWARDEN_CONTROLLER_HOME ?? path.join(e.RUNWARDEN_DATA_DIR, "controller"),
}));

export type Env = z.infer<typeof withDerived>;

/** Every variable this schema reads, in its order (docs/configuration.md lists each one). */
export const ENV_VARIABLES: readonly string[] = Object.keys(envSchema.shape);

export function readEnv(source: Record<string, string | undefined>): Env {
  // Treat empty strings as unset, the way shells usually mean them.
  const cleaned = Object.fromEntries(Object.entries(source).filter(([, v]) => v !== undefined && v !== ""));
  const parsed = withDerived.safeParse(cleaned);
  if (!parsed.success) {
    // Every wrong variable at once: a start that names one, then the next, costs a restart each.
    const lines = parsed.error.issues.map((issue) => `${issue.path.join(".") || "environment"}: ${issue.message}`);
    throw new Error(lines.length === 1 ? `invalid environment variable ${lines[0]}` : `invalid environment variables:\n  ${lines.join("\n  ")}`);
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
