import type { AlertSenderConfig } from "../alerts/deliver";
import type { Env } from "../env";
import { TURN_DEADLINE_MARGIN_MS } from "../providers/runner";

/** Everything a controller's behaviour depends on, read once from the environment. */
export interface ControllerConfig {
  instanceId: string;
  sandboxPrefix: string;
  home: string;
  concurrency: number;
  pollMs: number;
  sweepIntervalMs: number;
  intentWaitMs: number;
  settleMs: number;
  fenceMs: number;
  retryDelayMs: number;
  turnMs: number;
  /** A turn's budget (RUNWARDEN_TURN_TIMEOUT_MS): the runner kills the agent past it. */
  turnTimeoutMs: number;
  /** How long past the budget the controller polls for the runner's record before it gives up. */
  turnDeadlineMarginMs: number;
  /** How long a drain waits for a turn in flight before it suspends the run (RUNWARDEN_DRAIN_TIMEOUT_MS). */
  drainTimeoutMs: number;
  sessionOpenTimeoutMs: number;
  createTimeoutMs: number;
  /** The snapshot sandboxes are created from (null: the provider's default). */
  sandboxSnapshot: string | null;
  /** The sandbox's idle policy settings (docs/rules.md §4; `sandboxIdlePolicy` derives what is sent). */
  sandboxAutoStopMinutes: number | null;
  sandboxAutoDeleteMinutes: number;
  executorTimeoutMs: number;
  /** Failed recovery attempts before the run ends with Retry (§2.8). */
  recoveryMaxAttempts: number;
  /** First back-off after a failed recovery attempt (doubles, capped at 300 s). */
  recoveryBackoffMs: number;
  /** The provider breaker's first probe interval and its cap (§2.8). */
  breakerProbeMs: number;
  breakerProbeCapMs: number;
  /** A run's 429 waits before a 429 is judged like any other unavailability (RUNWARDEN_RATE_LIMIT_MAX_WAITS, _MAX_WAIT_MS; §2.8). */
  rateLimitMaxWaits: number;
  rateLimitMaxWaitMs: number;
  /** How long an outage lasts (confirmed) before `provider.outage_started` goes out (RUNWARDEN_OUTAGE_ALERT_MIN_MS). */
  outageAlertMinMs: number;
  /** Rows a sweep reads per page (the id cursor moves on after each). */
  pageSize: number;
  /** Due rows a sweep acts on at once (RUNWARDEN_SWEEP_LANES). */
  sweepLanes: number;
  crashAt: ReadonlySet<string>;
  /** The alert outbox's sender (RUNWARDEN_ALERT_*). */
  alerts: AlertSenderConfig;
  /** RUNWARDEN_ALERT_WEBHOOK_URL / _SECRET: the endpoint upserted at start (null: none). */
  alertWebhook: { url: string; secret: string | null } | null;
  /** RUNWARDEN_ALERT_ORPHAN_COST_PER_HOUR: orphans.cost_over's threshold in USD/h, judged by the teardown sweep (null: off). */
  orphanCostPerHour: number | null;
  /** How old the orphans inventory may be before that sweep lists the provider again for it (orphan-cost.ts). */
  orphanCostPassMs: number;
  /** Test-only: a recovery rule deliberately broken (see rules.ts). */
  breakRule: Env["RUNWARDEN_TEST_BREAK_RULE"] | null;
}

/** `instanceId` comes resolved (`instanceIdOf`): the environment may leave it to the database. */
export function controllerConfig(env: Env, overrides: Partial<ControllerConfig> & { instanceId: string }): ControllerConfig {
  return {
    sandboxPrefix: env.RUNWARDEN_SANDBOX_PREFIX,
    home: env.RUNWARDEN_CONTROLLER_HOME,
    concurrency: env.RUNWARDEN_CONCURRENCY,
    pollMs: env.RUNWARDEN_POLL_MS,
    sweepIntervalMs: env.RUNWARDEN_SWEEP_INTERVAL_MS,
    intentWaitMs: env.RUNWARDEN_INTENT_WAIT_MS,
    settleMs: env.RUNWARDEN_SETTLE_MS,
    fenceMs: env.RUNWARDEN_FENCE_MS,
    retryDelayMs: env.RUNWARDEN_RETRY_DELAY_MS,
    turnMs: env.RUNWARDEN_TURN_MS,
    turnTimeoutMs: env.RUNWARDEN_TURN_TIMEOUT_MS,
    turnDeadlineMarginMs: TURN_DEADLINE_MARGIN_MS,
    drainTimeoutMs: env.RUNWARDEN_DRAIN_TIMEOUT_MS,
    sessionOpenTimeoutMs: env.RUNWARDEN_SESSION_OPEN_TIMEOUT_MS,
    createTimeoutMs: env.RUNWARDEN_CREATE_TIMEOUT_MS,
    sandboxSnapshot: env.RUNWARDEN_SANDBOX_SNAPSHOT ?? null,
    sandboxAutoStopMinutes: env.RUNWARDEN_SANDBOX_AUTO_STOP_MINUTES ?? null,
    sandboxAutoDeleteMinutes: env.RUNWARDEN_SANDBOX_AUTO_DELETE_MINUTES,
    executorTimeoutMs: env.RUNWARDEN_EXECUTOR_TIMEOUT_MS,
    recoveryMaxAttempts: env.RUNWARDEN_RECOVERY_MAX_ATTEMPTS,
    recoveryBackoffMs: env.RUNWARDEN_RECOVERY_BACKOFF_MS,
    breakerProbeMs: env.RUNWARDEN_BREAKER_PROBE_MS,
    breakerProbeCapMs: Math.max(env.RUNWARDEN_BREAKER_PROBE_CAP_MS, env.RUNWARDEN_BREAKER_PROBE_MS),
    rateLimitMaxWaits: env.RUNWARDEN_RATE_LIMIT_MAX_WAITS,
    rateLimitMaxWaitMs: env.RUNWARDEN_RATE_LIMIT_MAX_WAIT_MS,
    outageAlertMinMs: env.RUNWARDEN_OUTAGE_ALERT_MIN_MS,
    // A page read is one round trip whatever its size: 500 rows keep a pass over a backlog of
    // live creators' intents near the database's own scan rate (docs/decisions/0003-cost-at-scale.md).
    pageSize: 500,
    sweepLanes: env.RUNWARDEN_SWEEP_LANES,
    breakRule: env.RUNWARDEN_TEST_BREAK_RULE ?? null,
    alerts: {
      baseMs: env.RUNWARDEN_ALERT_RETRY_BASE_MS,
      capMs: Math.max(env.RUNWARDEN_ALERT_RETRY_CAP_MS, env.RUNWARDEN_ALERT_RETRY_BASE_MS),
      maxAttempts: env.RUNWARDEN_ALERT_MAX_ATTEMPTS,
      timeoutMs: env.RUNWARDEN_ALERT_TIMEOUT_MS,
      batch: 16,
      destinations: { allow: env.RUNWARDEN_ALERT_ALLOW_NETWORKS },
    },
    alertWebhook: env.RUNWARDEN_ALERT_WEBHOOK_URL ? { url: env.RUNWARDEN_ALERT_WEBHOOK_URL, secret: env.RUNWARDEN_ALERT_WEBHOOK_SECRET ?? null } : null,
    orphanCostPerHour: env.RUNWARDEN_ALERT_ORPHAN_COST_PER_HOUR ?? null,
    // A full provider listing a minute at most per instance: the alert is about USD per hour.
    orphanCostPassMs: 60_000,
    crashAt: new Set((env.RUNWARDEN_CRASH_AT ?? "").split(",").map((s) => s.trim()).filter(Boolean)),
    ...overrides,
  };
}
