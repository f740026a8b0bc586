import { isProviderUnavailable } from "../engine";
import { ProviderError, type ProviderErrorScope } from "./errors";
import type { RunnerClient } from "./runner";
import type { SandboxProvider } from "./types";

/**
 * One breaker per provider in each controller (docs/rules.md §2.8). Every provider call goes
 * through `guardProvider` / `guardRunner`, which tell the breaker what happened. It is the
 * provider's breaker, not a sandbox's: only the provider's API being unavailable (an API call's
 * error the engine's `isProviderUnavailable` names, or a probe that fails) opens it, and only
 * the API answering (a call or a probe) closes it. A sandbox's toolbox failing — Daytona's proxy
 * answers 502 while one sandbox's daemon is not ready — opens nothing: `confirm` probes the API
 * after it, and the engine counts it as that run's attempt when the API answers. While open it
 * probes with a capped doubling back-off (at least the provider's own Retry-After), and the
 * controller claims nothing: runs wait where they are. It never decides a run's fate; it is
 * evidence for the engine's `recovery_attempt` proof and the outage's alerts (`outage-alert.ts`).
 */

export interface BreakerReading {
  open: boolean;
  /** ISO time the provider was first seen unavailable in this outage; null while closed. */
  unavailableSince: string | null;
  lastError: string | null;
  /** When the next probe goes (ISO); null while closed. */
  nextProbeAt: string | null;
  /** Probes made in this outage. */
  probes: number;
  /** When a probe first found the provider unavailable in this outage (it is confirmed); null while closed or not yet. */
  confirmedAt: string | null;
  /** The last time the provider's API answered (a call or a probe), ever; null: not yet. */
  answeredAt: string | null;
}

export type BreakerChange =
  | { to: "open"; since: string; error: string }
  /** A probe found it still unavailable. */
  | { to: "still_open"; since: string; error: string; probes: number }
  | { to: "closed"; since: string; at: string; probes: number; by: "probe" | "call" };

export interface BreakerOptions {
  /** One cheap call that proves the provider answers (an answer of any kind but unavailability). */
  probe: () => Promise<unknown>;
  /** First probe delay after the first one (ms); doubles up to capMs. */
  baseMs: number;
  capMs: number;
  onChange?: (change: BreakerChange, reading: BreakerReading) => void;
}

interface FailureFields {
  kind: ProviderError["kind"] | "other";
  status: number | null;
  code: string | null;
  retryAfterMs: number | null;
  /** Where the call went (absent: not a provider call). */
  scope?: ProviderErrorScope;
}

/** What an error was, in the engine's terms (recovery_attempt evidence's `failure`). */
export function failureOf(err: unknown): FailureFields {
  if (ProviderError.is(err)) return { kind: err.kind, status: err.status, code: err.code, retryAfterMs: err.retryAfterMs, scope: err.scope };
  return { kind: "other", status: null, code: null, retryAfterMs: null };
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
const message = (err: unknown) => (err instanceof Error ? err.message : String(err));

export class ProviderBreaker {
  private since: number | null = null;
  private lastError: string | null = null;
  private probes = 0;
  private confirmedAt: number | null = null;
  private answeredAt: number | null = null;
  private delayMs: number;
  private nextProbeAt: number | null = null;
  private timer: NodeJS.Timeout | null = null;
  /** Settles the scheduled probe's promise when the probe is called off. */
  private wake: (() => void) | null = null;
  private probing: Promise<void> | null = null;
  /** Settles when the first probe after the breaker opened has answered (or failed). */
  private firstProbe: Promise<void> | null = null;
  private stopped = false;

  constructor(private readonly options: BreakerOptions) {
    this.delayMs = options.baseMs;
  }

  get open(): boolean {
    return this.since !== null;
  }

  reading(): BreakerReading {
    return {
      open: this.open,
      unavailableSince: iso(this.since),
      lastError: this.lastError,
      nextProbeAt: this.open ? iso(this.nextProbeAt) : null,
      probes: this.probes,
      confirmedAt: this.open ? iso(this.confirmedAt) : null,
      answeredAt: iso(this.answeredAt),
    };
  }

  /**
   * A call failed: the API's unavailability opens the breaker (and probes at once); the API's
   * other answers close it. A toolbox's failure says nothing about the API: ignored here.
   */
  failed(err: unknown): void {
    const failure = failureOf(err);
    if (failure.scope === "toolbox") return;
    // Only an answer from the provider closes it: our own refusal, an abort or a bug says nothing.
    if (!isProviderUnavailable(failure)) return failure.kind === "http" || failure.kind === "garbage" ? this.answered("call") : undefined;
    this.lastError = message(err);
    if (this.open) {
      if (failure.retryAfterMs !== null) this.schedule(Math.max(failure.retryAfterMs, this.msUntilProbe()));
      return;
    }
    this.openNow(Date.now(), false);
    this.firstProbe = this.schedule(failure.retryAfterMs ?? 0);
  }

  /** An API call was answered: the provider is there. */
  succeeded(): void {
    this.answered("call");
  }

  /**
   * After an unavailability error: whether the provider is unavailable beyond this one call —
   * the breaker's reading once the first probe since it opened has answered. An error of a
   * sandbox's toolbox opened nothing: the API is probed now, and a probe that fails opens it.
   * Closed (a probe answered, or the error was the run's own) reads `open: false`.
   */
  async confirm(err?: unknown): Promise<BreakerReading> {
    if (!this.open && err !== undefined && !this.stopped) {
      const failure = failureOf(err);
      if (failure.scope === "toolbox" && isProviderUnavailable(failure)) await this.probe();
    }
    if (this.firstProbe) await this.firstProbe;
    return this.reading();
  }

  /**
   * Whether the provider's API has answered since `sinceMs` (the start of an outage another
   * controller saw): probed now unless it answered since, or the breaker is open.
   */
  async answeredSince(sinceMs: number): Promise<BreakerReading> {
    if (!this.open && !this.stopped && (this.answeredAt === null || this.answeredAt < sinceMs)) await this.probe();
    return this.reading();
  }

  stop(): void {
    this.stopped = true;
    this.clearTimer();
  }

  private openNow(at: number, confirmed: boolean): void {
    this.since = at;
    this.probes = confirmed ? 1 : 0;
    this.confirmedAt = confirmed ? at : null;
    this.delayMs = this.options.baseMs;
    this.options.onChange?.({ to: "open", since: new Date(at).toISOString(), error: this.lastError ?? "unavailable" }, this.reading());
  }

  private msUntilProbe(): number {
    return this.nextProbeAt === null ? 0 : Math.max(0, this.nextProbeAt - Date.now());
  }

  /** The next probe in `ms`; resolves when that probe has been made, or is called off. */
  private schedule(ms: number): Promise<void> {
    this.clearTimer();
    this.nextProbeAt = Date.now() + ms;
    return new Promise<void>((resolve) => {
      if (this.stopped) return resolve();
      this.wake = resolve;
      this.timer = setTimeout(() => {
        this.timer = null;
        this.wake = null;
        void this.probe().finally(resolve);
      }, ms);
      // A waiting probe does not keep a process alive that has nothing else to do.
      this.timer.unref();
    });
  }

  private clearTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const wake = this.wake;
    this.wake = null;
    wake?.();
  }

  private probe(): Promise<void> {
    this.probing ??= (async () => {
      if (this.open) this.probes += 1;
      try {
        await this.options.probe();
        this.answered("probe");
      } catch (err) {
        const failure = failureOf(err);
        if (!isProviderUnavailable(failure)) return this.answered("probe");
        if (this.stopped) return;
        this.lastError = message(err);
        const wait = Math.max(this.delayMs, failure.retryAfterMs ?? 0);
        if (!this.open) {
          // A probe asked for after a toolbox error found the API unavailable: the provider's
          // outage, confirmed by this very probe.
          this.openNow(Date.now(), true);
          this.firstProbe = Promise.resolve();
          this.delayMs = Math.min(this.delayMs * 2, this.options.capMs);
          void this.schedule(wait);
          return;
        }
        this.confirmedAt ??= Date.now();
        this.delayMs = Math.min(this.delayMs * 2, this.options.capMs);
        void this.schedule(wait);
        this.options.onChange?.({ to: "still_open", since: new Date(this.since!).toISOString(), error: this.lastError, probes: this.probes }, this.reading());
      } finally {
        this.probing = null;
      }
    })();
    return this.probing;
  }

  private answered(by: "probe" | "call"): void {
    this.answeredAt = Date.now();
    if (!this.open) return;
    const since = new Date(this.since!).toISOString();
    const probes = this.probes;
    this.since = null;
    this.lastError = null;
    this.nextProbeAt = null;
    this.firstProbe = null;
    this.confirmedAt = null;
    this.clearTimer();
    this.options.onChange?.({ to: "closed", since, at: new Date(this.answeredAt).toISOString(), probes, by }, this.reading());
  }
}

/** The provider's methods that go to one sandbox's toolbox, not its API: their answers say nothing about the API. */
const TOOLBOX_METHODS: ReadonlySet<PropertyKey> = new Set(["readFile", "homeDir"]);

/**
 * The provider with every call reported to the breaker (the probe itself goes around it): an
 * API call's answer closes it, its unavailability opens it; a toolbox call reports only its
 * failures, which open it only when they were the API's (the toolbox URL's lookup).
 */
export function guardProvider<P extends SandboxProvider>(provider: P, breaker: ProviderBreaker): P {
  return guard(provider, breaker, (prop) => !TOOLBOX_METHODS.has(prop));
}

/** The runner client with every failure reported to the breaker: its calls go to a sandbox's toolbox, so only an API error among them (the toolbox URL's lookup) opens it and no answer closes it. */
export function guardRunner(runner: RunnerClient, breaker: ProviderBreaker): RunnerClient {
  return guard(runner, breaker, () => false);
}

function guard<T extends object>(target: T, breaker: ProviderBreaker, answersCount: (prop: PropertyKey) => boolean): T {
  return new Proxy(target, {
    get(t, prop, receiver) {
      const value: unknown = Reflect.get(t, prop, receiver);
      if (typeof value !== "function") return value;
      const answers = answersCount(prop);
      if (prop === "listPagesByLabels") {
        return function (this: unknown, ...args: unknown[]) {
          return guardPages((value as (...a: unknown[]) => AsyncGenerator<unknown>).apply(t, args), breaker);
        };
      }
      return function (this: unknown, ...args: unknown[]) {
        const out = (value as (...a: unknown[]) => unknown).apply(t, args);
        return out instanceof Promise ? report(out, breaker, answers) : out;
      };
    },
  });
}

async function report<T>(call: Promise<T>, breaker: ProviderBreaker, answers: boolean): Promise<T> {
  try {
    const value = await call;
    if (answers) breaker.succeeded();
    return value;
  } catch (err) {
    breaker.failed(err);
    throw err;
  }
}

async function* guardPages<T>(pages: AsyncGenerator<T>, breaker: ProviderBreaker): AsyncGenerator<T, void, undefined> {
  for (;;) {
    let next: IteratorResult<T>;
    try {
      next = await pages.next();
    } catch (err) {
      breaker.failed(err);
      throw err;
    }
    breaker.succeeded();
    if (next.done) return;
    yield next.value;
  }
}
