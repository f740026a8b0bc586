import type { HeartbeatWriter } from "../db/heartbeat";
import type { Logger } from "pino";
import type { Db } from "../db/client";
import type { Identity } from "../engine";
import type { ProcessIdentity } from "../process/identity";
import type { RunnerClient } from "../providers/runner";
import type { ProviderBreaker } from "../providers/breaker";
import type { SandboxProvider } from "../providers/types";
import type { ControllerConfig } from "./config";

/** What every controller step works with. One per controller process. */
export interface ControllerContext {
  db: Db;
  provider: SandboxProvider;
  /** `emulator` or `daytona`: recorded on each lease. */
  providerTarget: string;
  runner: RunnerClient;
  identity: ProcessIdentity;
  config: ControllerConfig;
  log: Logger;
  /** Aborted when the controller drains: long waits end early and runs suspend. */
  drain: AbortController;
  /** The provider's breaker (§2.8); its provider and runner above report to it. Absent outside a controller. */
  breaker?: ProviderBreaker;
  /** The heartbeat's own connection (a controller process has one); without it the pool writes it. */
  heartbeat?: HeartbeatWriter;
}

export function evidenceIdentity(p: ProcessIdentity): Identity {
  return { bootId: p.bootId, pid: p.pid, startedAt: p.startedAt, startTicks: p.startTicks, pidSpace: p.pidSpace };
}

