import { applicableRules, UNAVAILABLE_KINDS, type FaultKind, type FaultPoint, type FaultRule, type FaultSubject } from "./faults";
import { HttpError } from "./http";
import { sandboxHost, type SandboxHost } from "./sandbox-host";
import type { EmulatorStore, Queryable, SandboxRow } from "./store";

/**
 * What the emulator's APIs share: its store, its runtime settings, the fault lookup, where a
 * sandbox lives on this host. `server.ts` builds one per emulator and hands it to each API.
 */

export type DuplicateNames = "conflict" | "allow";

export interface TransitionMs {
  create: number;
  start: number;
  stop: number;
  destroy: number;
}

export const DEFAULT_TRANSITION_MS: TransitionMs = { create: 150, start: 100, stop: 100, destroy: 100 };

/**
 * What the toolbox proxy answers for a deleted sandbox (Daytona v0.190.0,
 * apps/proxy/pkg/proxy/get_sandbox_target.go and auth.go): 404 while its caches still hold the
 * sandbox (runner info 2 min), then 401 "Bearer token is invalid" (the API no longer vouches
 * for the token) or 400 "failed to get runner info".
 */
export interface ToolboxGone {
  afterMs: number;
  status: 401 | 400;
}

export const DEFAULT_TOOLBOX_GONE: ToolboxGone = { afterMs: 120_000, status: 401 };

/** How long a create or start waits server-side for `started` (Daytona: `waitForSandboxStarted(…, 30)`, sandbox.controller.ts). */
export const DEFAULT_SERVER_WAIT_MS = 30_000;

/** Snapshots whose sandboxes have no `node` on PATH: Daytona's open-source default image has none (docs/daytona.md, "The runner inside the sandbox"). */
export const DEFAULT_SNAPSHOTS_WITHOUT_NODE = ["ubuntu:22.04"];

export interface EmulatorConfig {
  /**
   * How long a "not found" of a lookup by name is kept (Daytona: 10 s,
   * utils/sandbox-lookup-cache.util.ts); 0, the default here: not cached.
   */
  lookupCacheMs: number;
  /** How long a new sandbox stays out of lists (Daytona's list is eventually consistent); 0: none. */
  listLagMs: number;
  /** Snapshots without `node`: their sandboxes' shells find none (exit 127). */
  snapshotsWithoutNode: string[];
  /** How long a create or start waits for `started` before it answers. */
  serverWaitMs: number;
  duplicateNames: DuplicateNames;
  destroyedRetentionMs: number;
  transitionMs: TransitionMs;
  autoStopMinuteMs: number;
  toolboxGone: ToolboxGone;
}

export interface EmulatorContext {
  store: EmulatorStore;
  /** Runtime settings (also settable with `POST /admin/config`). */
  config: EmulatorConfig;
  dataDir: string;
  log: (line: string) => void;
  /** The emulator's own URL (known once it listens). */
  baseUrl(): string;
  /** Toolbox calls in progress per sandbox: a running turn keeps its sandbox alive. */
  inFlight: Map<string, number>;
  /** Sleeps, but no longer than until the emulator closes. */
  sleep(ms: number): Promise<void>;
  hostOf(row: Pick<SandboxRow, "id">): SandboxHost;
  /** The sandbox by id or name, or Daytona's 404. */
  requireSandbox(idOrName: string, db?: Queryable, lock?: boolean): Promise<SandboxRow>;
  /**
   * Applies matching latency rules, then returns the first rule of `kind` (its use taken), if
   * any. `rules`: the rules as the caller just read them (each use is still taken in the store).
   */
  faultFor(point: FaultPoint, subject: FaultSubject, kind: FaultKind | null, rules?: readonly FaultRule[]): Promise<FaultRule | null>;
  /** Takes one use of the first applicable rule of `kind` (latency already applied). */
  firstFault(point: FaultPoint, subject: FaultSubject, kind: FaultKind): Promise<FaultRule | null>;
  /** Lookups by name that answered "not found", kept `config.lookupCacheMs`. */
  lookupCache: LookupCache;
}

export interface LookupCache {
  /** A lookup by name missed. */
  missed(name: string): void;
  /** Whether a cached miss still answers for this name (even though `found` exists now). */
  stale(name: string, found: SandboxRow | null): boolean;
}

export function createContext(args: {
  store: EmulatorStore;
  config: EmulatorConfig;
  dataDir: string;
  log: (line: string) => void;
  baseUrl: () => string;
  closing: AbortSignal;
}): EmulatorContext {
  const { store, closing } = args;

  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      if (ms <= 0 || closing.aborted) return resolve();
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        closing.removeEventListener("abort", done);
        resolve();
      }
      closing.addEventListener("abort", done, { once: true });
    });

  async function faultFor(point: FaultPoint, subject: FaultSubject, kind: FaultKind | null, preread?: readonly FaultRule[]): Promise<FaultRule | null> {
    const rules = preread ?? (await store.faults());
    for (const rule of applicableRules(rules, point, subject, "latency")) {
      if (rule.fault.kind === "latency" && (await store.consumeFault(rule.id))) await sleep(rule.fault.ms);
    }
    for (const unavailable of UNAVAILABLE_KINDS) {
      for (const rule of applicableRules(rules, point, subject, unavailable)) {
        if (await store.consumeFault(rule.id)) await unavailableAnswer(rule.fault, point);
      }
    }
    if (kind === null || kind === "latency") return null;
    for (const rule of applicableRules(rules, point, subject, kind)) {
      if (await store.consumeFault(rule.id)) return rule;
    }
    return null;
  }

  /** Throws (or holds) what an unavailable Daytona answers. */
  async function unavailableAnswer(fault: FaultRule["fault"], point: FaultPoint): Promise<void> {
    switch (fault.kind) {
      case "rate_limit": {
        // @nestjs/throttler's named throttlers: headers suffixed with the throttler's name.
        const t = fault.throttler;
        throw new HttpError(429, "too_many_requests", "ThrottlerException: Too Many Requests", {
          "retry-after": String(fault.retryAfterSeconds),
          [`x-ratelimit-limit-${t}`]: "10",
          [`x-ratelimit-remaining-${t}`]: "0",
          [`x-ratelimit-reset-${t}`]: String(fault.retryAfterSeconds),
        });
      }
      case "http_error":
        if (fault.status === 502) {
          throw new HttpError(502, "bad_gateway", "Bad Gateway", {}, "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n");
        }
        throw new HttpError(fault.status, "internal", point === "create" ? "Failed to create sandbox" : "Internal server error");
      case "hang":
        // Held until the client gives up; an answer nobody waits for is never written.
        await sleep(600_000);
        throw new HttpError(504, "gateway_timeout", "the emulator held this request (hang fault) until it closed");
      default:
        return;
    }
  }

  async function firstFault(point: FaultPoint, subject: FaultSubject, kind: FaultKind): Promise<FaultRule | null> {
    for (const rule of applicableRules(await store.faults(), point, subject, kind)) {
      if (await store.consumeFault(rule.id)) return rule;
    }
    return null;
  }

  async function requireSandbox(idOrName: string, db?: Queryable, lock = false): Promise<SandboxRow> {
    const row = await store.find(idOrName, new Date(), db, lock);
    if (!row) throw new HttpError(404, "not_found", `Sandbox with ID or name ${idOrName} not found`);
    return row;
  }

  const misses = new Map<string, number>();
  const lookupCache: LookupCache = {
    missed(name) {
      if (args.config.lookupCacheMs > 0) misses.set(name, Date.now() + args.config.lookupCacheMs);
    },
    stale(name, found) {
      const until = misses.get(name);
      if (until === undefined) return false;
      if (until <= Date.now()) {
        misses.delete(name);
        return false;
      }
      // By id the cache is another key: only a name's miss lingers.
      return !found || found.name === name;
    },
  };

  return {
    store,
    lookupCache,
    config: args.config,
    dataDir: args.dataDir,
    log: args.log,
    baseUrl: args.baseUrl,
    inFlight: new Map(),
    sleep,
    hostOf: (row) => sandboxHost(args.dataDir, row.id),
    requireSandbox,
    faultFor,
    firstFault,
  };
}
