import pino from "pino";
import type { Db } from "../db/client";
import { env } from "../env";
import { currentProcessIdentity } from "../process/identity";
import { providerFromEnv } from "../providers/from-env";
import { controllerConfig } from "./config";
import type { ControllerContext } from "./context";

const cache = new WeakMap<Db, ControllerContext>();

/**
 * A controller context for a process that is not a controller (the dashboard, the CLI):
 * what it needs to run a sweep on demand or make Retry's one cleanup attempt. It acts
 * under its own process identity, so a claim it leaves behind is judged like any other.
 */
export function serviceContext(db: Db, instanceId: string): ControllerContext {
  let ctx = cache.get(db);
  if (!ctx) {
    const config = controllerConfig(env, { instanceId });
    const { provider, runner, target } = providerFromEnv(env, { instanceId: config.instanceId });
    ctx = {
      db,
      provider,
      providerTarget: target,
      runner,
      identity: currentProcessIdentity(),
      config,
      log: pino({ name: "service", level: env.LOG_LEVEL }),
      drain: new AbortController(),
    };
    cache.set(db, ctx);
  }
  return ctx;
}
