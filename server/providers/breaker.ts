import { isProviderUnavailable } from "../engine";
import { ProviderError } from "./errors";
import type { RunnerClient } from "./runner";
import type { SandboxProvider } from "./types";

/**
 * One breaker per provider in each controller (docs/rules.md §2.8). Every provider call goes
 * through `guardProvider` / `guardRunner`, which tell the breaker what happened: an error that
 * says the provider is unavailable (the engine's `isProviderUnavailable`) opens it, any answer
 * closes it. While open it probes the provider with a capped doubling back-off (at least the
 * provider's own Retry-After), and the controller claims nothing: runs wait where they are.
 * It never decides a run's fate; it is evidence for the engine's `recovery_attempt` proof.
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
}

/** What an error was, in the engine's terms (recovery_attempt evidence's `failure`). */
export function failureOf(err: unknown): FailureFields {
  if (ProviderError.is(err)) return { kind: err.kind, status: err.status, code: err.code, retryAfterMs: err.retryAfterMs };
  return { kind: "other", status: null, code: null, retryAfterMs: null };
}

export class ProviderBreaker {
  private since: number | null = null;
  private lastError: string | null = null;
  private probes = 0;
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
      unavailableSince: this.since === null ? null : new Date(this.since).toISOString(),
      lastError: this.lastError,
      nextProbeAt: this.open && this.nextProbeAt !== null ? new Date(this.nextProbeAt).toISOString() : null,
      probes: this.probes,
    };
  }

  /** A call failed: an unavailability opens the breaker (and probes at once); anything else is an answer. */
  failed(err: unknown): void {
    const failure = failureOf(err);
    // Only an answer from the provider closes it: our own refusal, an abort or a bug says nothing.
    if (!isProviderUnavailable(failure)) return failure.kind === "http" || failure.kind === "garbage" ? this.answered("call") : undefined;
    this.lastError = err instanceof Error ? err.message : String(err);
    if (this.open) {
      if (failure.retryAfterMs !== null) this.schedule(Math.max(failure.retryAfterMs, this.msUntilProbe()));
      return;
    }
    this.since = Date.now();
    this.probes = 0;
    this.delayMs = this.options.baseMs;
    this.options.onChange?.({ to: "open", since: new Date(this.since).toISOString(), error: this.lastError }, this.reading());
    this.firstProbe = this.schedule(failure.retryAfterMs ?? 0);
  }

  /** A call was answered: the provider is there. */
  succeeded(): void {
    this.answered("call");
  }

  /**
   * After an unavailability error: whether the provider is unavailable beyond this one call —
   * the breaker's reading once the first probe since it opened has answered. Closed (a probe
   * answered, or the error was the run's own) reads `open: false`.
   */
  async confirm(): Promise<BreakerReading> {
    if (this.firstProbe) await this.firstProbe;
    return this.reading();
  }

  stop(): void {
    this.stopped = true;
    this.clearTimer();
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
      this.probes += 1;
      try {
        await this.options.probe();
        this.answered("probe");
      } catch (err) {
        const failure = failureOf(err);
        if (!isProviderUnavailable(failure)) return this.answered("probe");
        this.lastError = err instanceof Error ? err.message : String(err);
        if (!this.open || this.stopped) return;
        const wait = Math.max(this.delayMs, failure.retryAfterMs ?? 0);
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
    if (!this.open) return;
    const since = new Date(this.since!).toISOString();
    const probes = this.probes;
    this.since = null;
    this.lastError = null;
    this.nextProbeAt = null;
    this.firstProbe = null;
    this.clearTimer();
    this.options.onChange?.({ to: "closed", since, at: new Date().toISOString(), probes, by }, this.reading());
  }
}

/** The provider with every call reported to the breaker (the probe itself goes around it). */
export function guardProvider<P extends SandboxProvider>(provider: P, breaker: ProviderBreaker): P {
  return new Proxy(provider, {
    get(target, prop, receiver) {
      const value: unknown = Reflect.get(target, prop, receiver);
      if (typeof value !== "function") return value;
      if (prop === "listPagesByLabels") {
        return function (this: unknown, ...args: unknown[]) {
          return guardPages((value as (...a: unknown[]) => AsyncGenerator<unknown>).apply(target, args), breaker);
        };
      }
      return function (this: unknown, ...args: unknown[]) {
        const out = (value as (...a: unknown[]) => unknown).apply(target, args);
        return out instanceof Promise ? report(out, breaker) : out;
      };
    },
  });
}

/** The runner client with every call reported to the breaker: its calls go through the provider's toolbox. */
export function guardRunner(runner: RunnerClient, breaker: ProviderBreaker): RunnerClient {
  return guardProvider(runner as unknown as SandboxProvider, breaker) as unknown as RunnerClient;
}

async function report<T>(call: Promise<T>, breaker: ProviderBreaker): Promise<T> {
  try {
    const value = await call;
    breaker.succeeded();
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
