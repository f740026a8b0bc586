import { buildVersion } from "../lib/build-version";
import { shippedRunnerProgram } from "../providers/runner";
import { deliverDueAlerts } from "../alerts/deliver";
import { upsertEnvEndpoint } from "../alerts/endpoints";
import type { Run } from "../db/client";
import { ensureInstance } from "../db/installation";
import { compactRollups } from "../db/rollups";
import { checkForecasts } from "../forecasts/check";
import type { ControllerContext } from "./context";
import { DRAIN_SUSPEND_GRACE_MS } from "./drain";
import { executeRun } from "./execute";
import { isRunLost, rereadOwnRun, type RunFence } from "./fence";
import { clearProviderWait, createBreaker, recordBreakerChange, waitsForProvider } from "./outage";
import { watchOutage } from "./outage-alerts";
import { guardProvider, guardRunner } from "../providers/breaker";
import { appendEvent } from "./records";
import { claimInterruptedRuns, claimUntrackedRuns, countFailedAttempt, recoverRun, type ExecutorStatus } from "./recovery";
import { sweepCreationIntents, sweepTeardown, type SweepSummary } from "./sweeps";

/** Whether the run's epoch moved past the one `claimed` holds (a takeover: recovery, Retry, Cancel); a read that fails says no. */
async function takenOver(ctx: ControllerContext, claimed: RunFence): Promise<boolean> {
  return rereadOwnRun(ctx, claimed).then(
    () => false,
    (err: unknown) => isRunLost(err),
  );
}

export type ControllerDeps = Omit<ControllerContext, "drain" | "breaker">;

/** How often a controller says it is alive; the silence window (RUNWARDEN_EXECUTOR_TIMEOUT_MS) is several of these. */
export const HEARTBEAT_MS = 2_000;

/** The alert sender's pass at most this often (a due delivery waits at most this long past its time). */
const ALERT_POLL_MS = 1_000;

/** The stored forecasts' check (§2.12) at most this often: unchecked rows whose run was claimed since. */
const FORECAST_CHECK_MS = 2_000;

/** The outage's alerts looked at (`watchOutage`) at most this often: an outage is paged or ended within about this of its due time. */
const OUTAGE_WATCH_MS = 1_000;

/**
 * One controller process: records its identity, recovers interrupted runs, executes
 * queued ones, and sweeps on an interval. Several may share one database.
 */
export class Controller {
  readonly ctx: ControllerContext;
  private readonly tasks = new Map<string, Promise<void>>();
  private timer: NodeJS.Timeout | null = null;
  private heartbeatTimer: NodeJS.Timeout | null = null;
  private ticking = false;
  private sweeping: Promise<SweepSummary[]> | null = null;
  private alerting: Promise<unknown> | null = null;
  private lastAlertPassAt = 0;
  private checkingForecasts: Promise<unknown> | null = null;
  private lastForecastCheckAt = 0;
  private lastSweepAt = 0;
  private lastHeartbeatAt = 0;
  private stopped = false;
  /**
   * The breaker's changes and the outage's looks, one after another in the order they came
   * (docs/alerts.md): an open and the close right after it are never recorded the other way round.
   */
  private outageQueue: Promise<void> = Promise.resolve();
  private watchingOutage = false;
  private lastOutageWatchAt = 0;

  constructor(deps: ControllerDeps) {
    // Every provider call reports to the breaker (§2.8); its changes are logged and recorded, in order.
    const breaker = createBreaker(deps, (change, reading) => {
      this.inOrder(() => recordBreakerChange(this.ctx, change, reading), "breaker state could not be recorded");
    });
    this.ctx = { ...deps, provider: guardProvider(deps.provider, breaker), runner: guardRunner(deps.runner, breaker), breaker, drain: new AbortController() };
  }

  get running(): number {
    return this.tasks.size;
  }

  /** Runs `work` after everything queued before it has settled; a failure is logged, the queue goes on. */
  private inOrder(work: () => Promise<unknown>, failure: string): Promise<void> {
    this.outageQueue = this.outageQueue.then(work).then(
      () => undefined,
      (err: unknown) => this.ctx.log.error({ err: String(err) }, failure),
    );
    return this.outageQueue;
  }

  /** Records this process (docs/rules.md §1) and makes sure its instance exists. */
  async boot(): Promise<void> {
    const { db, identity, config } = this.ctx;
    await ensureInstance(db, config.instanceId, config.sandboxPrefix);
    const shipped = shippedRunnerProgram();
    await db.controllerProcess.create({
      data: {
        bootId: identity.bootId,
        instanceId: config.instanceId,
        pid: identity.pid,
        startedAt: new Date(identity.startedAt),
        startTicks: identity.startTicks === null ? null : BigInt(identity.startTicks),
        hostname: identity.hostname,
        pidSpace: identity.pidSpace,
        home: config.home,
        // Versions side by side are facts (docs/operations.md, "Upgrades and migrations").
        version: buildVersion(),
        runnerDigest: shipped.digest,
        runnerProtocol: shipped.protocol,
      },
    });
    if (config.alertWebhook) {
      const { id, created } = await upsertEnvEndpoint(db, config.instanceId, config.alertWebhook.url, config.alertWebhook.secret, { id: `controller:${identity.bootId}`, role: "controller" });
      this.ctx.log.info({ endpoint: id, created }, "alert endpoint from RUNWARDEN_ALERT_WEBHOOK_URL");
    }
    this.ctx.log.info({ bootId: identity.bootId, pid: identity.pid, pidSpace: identity.pidSpace, version: buildVersion(), runner: `${shipped.digest} (protocol ${shipped.protocol})` }, "controller booted");
  }

  start(): void {
    // Its own loop: a tick that waits on recovery or a slow provider must not look like silence
    // to another host (a long tick once let a healthy controller's runs be taken over).
    const beat = async () => {
      if (this.stopped) return;
      await this.heartbeat().catch((err: unknown) => this.ctx.log.error({ err: String(err) }, "heartbeat failed"));
      if (!this.stopped) this.heartbeatTimer = setTimeout(() => void beat(), HEARTBEAT_MS);
    };
    void beat();
    const loop = async () => {
      if (this.stopped) return;
      await this.tick().catch((err: unknown) => this.ctx.log.error({ err: String(err) }, "controller tick failed"));
      if (!this.stopped) this.timer = setTimeout(() => void loop(), this.ctx.config.pollMs);
    };
    void loop();
  }

  /** One round: heartbeat, recover, claim queued runs, and sweep when due. */
  async tick(): Promise<void> {
    if (this.ticking) return;
    this.ticking = true;
    try {
      const now = Date.now();
      if (now - this.lastHeartbeatAt > HEARTBEAT_MS) await this.heartbeat();
      if (this.ctx.drain.signal.aborted) return;
      // Alerts go out whatever the provider does (an outage is one of them); not awaited, one
      // pass at a time, at most every ALERT_POLL_MS however fast the tick.
      if (!this.alerting && now - this.lastAlertPassAt >= Math.max(this.ctx.config.pollMs, ALERT_POLL_MS)) {
        this.lastAlertPassAt = now;
        this.alerting = deliverDueAlerts(this.ctx.db, this.ctx.config.instanceId, this.ctx.config.alerts, this.ctx.log)
          .catch((err: unknown) => this.ctx.log.error({ err: String(err) }, "alert delivery pass failed"))
          .finally(() => {
            this.alerting = null;
          });
      }
      // Stored forecasts checked against the restarts since (reads the database only); not awaited.
      if (!this.checkingForecasts && now - this.lastForecastCheckAt >= Math.max(this.ctx.config.pollMs, FORECAST_CHECK_MS)) {
        this.lastForecastCheckAt = now;
        this.checkingForecasts = checkForecasts(this.ctx.db, this.ctx.config.instanceId, { limit: 100 })
          .catch((err: unknown) => this.ctx.log.error({ err: String(err) }, "forecast check failed"))
          .finally(() => {
            this.checkingForecasts = null;
          });
      }
      // The outage's alerts (docs/alerts.md): paged once it lasted and was confirmed, ended by
      // whoever sees the provider back — also when the controllers that had it open are gone.
      // Queued behind the breaker's records; one look at a time, not awaited.
      if (!this.watchingOutage && now - this.lastOutageWatchAt >= Math.max(this.ctx.config.pollMs, OUTAGE_WATCH_MS)) {
        this.lastOutageWatchAt = now;
        this.watchingOutage = true;
        void this.inOrder(() => watchOutage(this.ctx), "outage alerts could not be judged").finally(() => {
          this.watchingOutage = false;
        });
      }
      // The provider is unavailable (§2.8): nothing is claimed, swept or recovered; runs wait
      // where they are until a probe (or a call in flight) finds it back.
      if (this.ctx.breaker?.open) return;
      // The sweep first, and not awaited: a restarted controller's first act is to look for
      // what the last one left behind, while it recovers and claims runs (`npm run bench`, docs/cli.md).
      if (now - this.lastSweepAt >= this.ctx.config.sweepIntervalMs && !this.sweeping) {
        this.lastSweepAt = now;
        void this.sweep("interval").catch((err: unknown) => this.ctx.log.error({ err: String(err) }, "sweep failed"));
      }
      await this.recoverInterrupted();
      await this.claimQueued();
    } finally {
      this.ticking = false;
    }
  }

  /** Written with the database's clock, as silence is judged (§2.10): never this host's. */
  async heartbeat(): Promise<void> {
    this.lastHeartbeatAt = Date.now();
    if (this.ctx.heartbeat) return this.ctx.heartbeat.beat();
    await this.ctx.db.$executeRaw`UPDATE controller_processes SET last_seen_at = now() WHERE boot_id = ${this.ctx.identity.bootId}`;
  }

  /** Both sweeps, once; concurrent calls share the pass in flight. */
  sweep(trigger: string): Promise<SweepSummary[]> {
    this.sweeping ??= (async () => {
      try {
        const intents = await sweepCreationIntents(this.ctx, trigger);
        const teardown = await sweepTeardown(this.ctx, trigger);
        // The dashboard's counts stay a few rows per group, however many changes they summed.
        await compactRollups(this.ctx.db).catch((err: unknown) => this.ctx.log.error({ err: String(err) }, "rollup compaction failed"));
        return [intents, teardown];
      } finally {
        this.sweeping = null;
      }
    })();
    return this.sweeping;
  }

  private freeSlots(): number {
    return Math.max(0, this.ctx.config.concurrency - this.tasks.size);
  }

  private async recoverInterrupted(): Promise<void> {
    // Its own runs first: one whose claim's reply was lost has no one else to take it up.
    for (const { run, status } of await claimUntrackedRuns(this.ctx, this.tasks, this.freeSlots())) this.recover(run, status);
    const slots = this.freeSlots();
    if (slots === 0) return;
    for (const { run, status } of await claimInterruptedRuns(this.ctx, slots)) this.recover(run, status);
  }

  private recover(run: Run, status: ExecutorStatus): void {
    this.track(run, async () => {
      if (!(await recoverRun(this.ctx, run, status))) return;
      // It goes on: whatever it waited for is over.
      if (run.providerWaitSince) await clearProviderWait(this.ctx, run);
      await executeRun(this.ctx, run);
    });
  }

  private async claimQueued(): Promise<void> {
    const slots = this.freeSlots();
    if (slots === 0) return;
    const rows = await this.ctx.db.$queryRaw<Array<{ id: string; executorEpoch: number }>>`
      UPDATE runs SET status = 'starting'::"RunStatus", executor_boot_id = ${this.ctx.identity.bootId}, executor_epoch = executor_epoch + 1, heartbeat_at = now(), updated_at = now()
      WHERE id IN (
        SELECT id FROM runs
        WHERE instance_id = ${this.ctx.config.instanceId} AND status = 'queued'::"RunStatus" AND (retry_at IS NULL OR retry_at <= now())
        ORDER BY created_at, id
        LIMIT ${slots}
        FOR UPDATE SKIP LOCKED)
      RETURNING id, executor_epoch AS "executorEpoch"`;
    // Each row is tracked before anything else is awaited: a claim is never committed and
    // left untracked by a failure after it (claimUntrackedRuns adopts only what is not tracked).
    for (const claimed of rows) {
      this.track(claimed, async () => {
        await appendEvent(this.ctx.db, claimed.id, "claimed", this.ctx.identity.bootId);
        await executeRun(this.ctx, claimed);
      });
    }
  }

  /** Runs the work on a run claimed at `claimed.executorEpoch`; every write it makes is fenced on that epoch. */
  private track(claimed: RunFence, work: () => Promise<void>): void {
    const runId = claimed.id;
    const task = work()
      .catch(async (err: unknown) => {
        // Taken over (§2.10): stop working on it; its leases are the new executor's. A call that
        // failed because of the takeover (a Cancel destroyed the sandbox mid-turn, §2.11) is the
        // same loss, not the run's failure: nothing is counted, logged as a bug or recovered.
        if (isRunLost(err) || (await takenOver(this.ctx, claimed))) {
          this.ctx.log.warn({ runId, err: err instanceof Error ? err.message : String(err) }, "run lost: taken over by another controller or cancelled");
          return;
        }
        // A failed attempt is counted and judged (§2.8): the run is let go with a back-off so
        // recovery (a "hot" restart) takes it up with proof, or it ends with Retry.
        // The provider's absence is no bug of ours: one line, no stack (the engine judges it below).
        if (waitsForProvider(err)) this.ctx.log.warn({ runId, err: err instanceof Error ? err.message : String(err) }, "run task met an unavailable provider");
        else this.ctx.log.error({ runId, err: err instanceof Error ? err.stack : String(err) }, "run task failed");
        await countFailedAttempt(this.ctx, claimed, err).catch(async (countErr: unknown) => {
          this.ctx.log.error({ runId, err: String(countErr) }, "recovery attempt could not be counted");
          await this.ctx.db.run
            .updateMany({ where: { id: runId, executorBootId: this.ctx.identity.bootId, executorEpoch: claimed.executorEpoch }, data: { executorBootId: null } })
            .catch(() => {});
        });
      })
      // A run let go and claimed again is tracked by its new task: only this task's own entry goes.
      .finally(() => {
        if (this.tasks.get(runId) === task) this.tasks.delete(runId);
      });
    this.tasks.set(runId, task);
  }

  /**
   * Graceful drain (SIGTERM): no new work, running runs suspend where they stand, then
   * the process records that it stopped so the next controller reattaches at once.
   */
  async drain(): Promise<void> {
    this.ctx.log.info({ running: this.tasks.size }, "draining");
    this.ctx.drain.abort();
    // Bounded (docs/operations.md, "Stopping"): a turn in flight is awaited at most RUNWARDEN_DRAIN_TIMEOUT_MS,
    // then its run suspends where it stands; whatever is still working after a grace for those
    // suspends is left to the next controller (its writes are fenced on the epoch, §2.10).
    let timer: NodeJS.Timeout | null = null;
    const bounded = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), this.ctx.config.drainTimeoutMs + DRAIN_SUSPEND_GRACE_MS);
      timer.unref();
    });
    const settled = await Promise.race([Promise.allSettled([...this.tasks.values()]).then(() => true as const), bounded]);
    if (timer) clearTimeout(timer);
    if (!settled) this.ctx.log.warn({ running: [...this.tasks.keys()] }, "drain bound passed with runs still in flight");
    await this.stop("drain");
  }

  async stop(reason: string): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.heartbeatTimer) clearTimeout(this.heartbeatTimer);
    this.ctx.breaker?.stop();
    // A delivery in flight finishes (bounded by its timeout) and records its answer; the
    // breaker's last changes are recorded before the row says it stopped.
    await this.alerting;
    await this.checkingForecasts;
    await this.outageQueue;
    await this.ctx.db.controllerProcess
      .update({ where: { bootId: this.ctx.identity.bootId }, data: { stoppedAt: new Date(), stopReason: reason } })
      .catch(() => {});
  }

  /** Waits until no run task is in flight (tests). */
  async idle(): Promise<void> {
    while (this.tasks.size > 0) await Promise.allSettled([...this.tasks.values()]);
  }
}
