import fs from "node:fs";
import pino from "pino";
import { createDb } from "../db/client";
import { createHeartbeatWriter } from "../db/heartbeat";
import { openDatabase } from "../db/embedded";
import { instanceIdOf } from "../db/installation";
import { migrate } from "../db/migrate";
import { describeUrl } from "../db/url";
import type { Env } from "../env";
import { currentProcessIdentity } from "../process/identity";
import { providerFromEnv } from "../providers/from-env";
import { onStopRequest, type StopRequest } from "../lib/stop-signals";
import { controllerConfig } from "./config";
import { Controller } from "./controller";

/**
 * `npm run controller`: one controller process. SIGTERM, SIGINT, SIGHUP or its launcher's exit
 * drains it (runs are suspended for the next controller); a second Ctrl-C exits at once.
 */
export async function runControllerProcess(env: Env): Promise<void> {
  const log = pino({ name: "controller", level: env.LOG_LEVEL, base: { pid: process.pid } });
  // Listening from the first line (server/lib/stop-signals.ts): a stop asked for while it boots
  // is carried out once it has booted, never by dying mid-migration or with a database started.
  let drain: ((request: StopRequest) => void) | null = null;
  let pending: StopRequest | null = null;
  onStopRequest((request) => {
    if (request.forced) {
      log.warn({ signal: request.reason }, "second Ctrl-C: exiting without finishing the drain");
      process.exit(130);
    }
    if (drain) drain(request);
    else if (!pending) {
      pending = request;
      log.info({ signal: request.why }, "stop requested while starting: drains once started");
    }
  });
  const database = await openDatabase({ env, log: (line) => log.info(line) });
  await migrate(database.url, { log: (line) => log.info(line) });
  // A fixed pool, whatever the concurrency (docs/operations.md, "Connections"): a run holds a connection only for a
  // statement or a short transaction, never across a provider call or a turn. Named by this
  // process's boot id, so pg_stat_activity counts each controller's connections.
  const identity = currentProcessIdentity();
  const db = createDb(database.url, {
    max: env.RUNWARDEN_DB_POOL_MAX,
    applicationName: `runwarden-controller ${identity.bootId}`,
    idleInTransactionTimeoutMs: idleInTransactionTimeoutMs(env.RUNWARDEN_EXECUTOR_TIMEOUT_MS),
  });
  const config = controllerConfig(env, { instanceId: await instanceIdOf(db, env.RUNWARDEN_INSTANCE_ID) });
  fs.mkdirSync(config.home, { recursive: true });
  const { provider, runner, target, apiUrl } = providerFromEnv(env, { instanceId: config.instanceId });
  // Its own connection, named as the pool is: a busy pool never holds the heartbeat back.
  const heartbeat = createHeartbeatWriter(database.url, { bootId: identity.bootId, applicationName: `runwarden-controller ${identity.bootId}` });
  const controller = new Controller({ db, provider, providerTarget: target, runner, identity, config, log, heartbeat });
  await controller.boot();
  log.info({ database: describeUrl(database.url), provider: target, apiUrl, instance: config.instanceId, home: config.home }, "controller ready");
  controller.start();
  // A plain line whatever LOG_LEVEL says: launchers and tests wait for it.
  process.stdout.write(`controller ready: bootId=${controller.ctx.identity.bootId} pid=${process.pid}\n`);

  let draining = false;
  drain = (request) => {
    if (draining) return;
    draining = true;
    log.info({ signal: request.why }, "drain requested");
    void controller
      .drain()
      .then(async () => {
        await heartbeat.close();
        await db.$disconnect();
        await database.stop();
        log.info("drained and stopped");
        process.exit(0);
      })
      .catch((err: unknown) => {
        log.error({ err: String(err) }, "drain failed");
        process.exit(1);
      });
  };
  if (pending) drain(pending);
}

/**
 * How long a controller's transaction may sit idle before PostgreSQL ends its session: twice
 * the silence window (at least 10 s). A controller stalled inside a transaction is taken over
 * by silence; its row lock on the run must not outlast that by more than this, while a live
 * one's transactions (a few statements, a sweep's provider lookups) finish well inside it.
 */
export function idleInTransactionTimeoutMs(executorTimeoutMs: number): number {
  return Math.max(10_000, 2 * executorTimeoutMs);
}
