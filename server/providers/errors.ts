/**
 * What went wrong talking to a provider:
 * - `unreachable`: no HTTP answer at all (refused, reset, DNS);
 * - `timeout`: no answer within the request bound;
 * - `aborted`: the caller's signal ended the request;
 * - `garbage`: an answer that is not what the API promises (HTML, invalid JSON, wrong shape);
 * - `http`: a well-formed error status (`status`, and the provider's `code` when it gave one);
 * - `refused`: Runwarden itself refused the call before sending it (e.g. an unscoped list).
 */
export type ProviderErrorKind = "unreachable" | "timeout" | "aborted" | "garbage" | "http" | "refused";

/**
 * Where the call went: the provider's sandbox API (one service for every sandbox), or one
 * sandbox's toolbox behind the provider's proxy (files, process/execute, the runner). Only the
 * API's unavailability is the provider's outage; a toolbox's is its sandbox's (docs/rules.md §2.8).
 */
export type ProviderErrorScope = "api" | "toolbox";

export class ProviderError extends Error {
  override name = "ProviderError";
  readonly kind: ProviderErrorKind;
  /** HTTP status when there was one. */
  readonly status: number | null;
  /** The provider's (or runner's) error code, e.g. `conflict`, `runner_ingress_bind_conflict`. */
  readonly code: string | null;
  /** What was being done, e.g. `GET /sandbox/rw-create-op-1`. */
  readonly operation: string;
  /** How long the provider asked us to wait (Retry-After, X-RateLimit-Reset), in ms, when it said. */
  readonly retryAfterMs: number | null;
  /** The API unless the error says it was a sandbox's toolbox. */
  readonly scope: ProviderErrorScope;

  constructor(
    kind: ProviderErrorKind,
    operation: string,
    message: string,
    extra: { status?: number | null; code?: string | null; cause?: unknown; retryAfterMs?: number | null; scope?: ProviderErrorScope } = {},
  ) {
    super(`${operation}: ${message}`, extra.cause === undefined ? undefined : { cause: extra.cause });
    this.kind = kind;
    this.operation = operation;
    this.status = extra.status ?? null;
    this.code = extra.code ?? null;
    this.retryAfterMs = extra.retryAfterMs ?? null;
    this.scope = extra.scope ?? "api";
  }

  static is(err: unknown): err is ProviderError {
    return err instanceof ProviderError;
  }
}

/**
 * The provider's own "wait this long" on a 429 or 503, in ms: `Retry-After` (seconds or an
 * HTTP date), else the soonest `X-RateLimit-Reset*` (seconds until the window resets; Daytona's
 * throttlers name theirs `X-RateLimit-Reset-<throttler>`). Null when it said nothing usable.
 */
export function retryAfterMs(header: (name: string) => string | null | undefined, names: readonly string[], now: number = Date.now()): number | null {
  const retryAfter = header("retry-after")?.trim();
  if (retryAfter) {
    if (/^\d+(\.\d+)?$/.test(retryAfter)) return Math.round(Number(retryAfter) * 1000);
    const when = Date.parse(retryAfter);
    if (!Number.isNaN(when)) return Math.max(0, when - now);
  }
  let soonest: number | null = null;
  for (const name of names) {
    if (!name.toLowerCase().startsWith("x-ratelimit-reset")) continue;
    const v = header(name)?.trim();
    if (!v || !/^\d+(\.\d+)?$/.test(v)) continue;
    const ms = Math.round(Number(v) * 1000);
    soonest = soonest === null ? ms : Math.min(soonest, ms);
  }
  return soonest;
}
