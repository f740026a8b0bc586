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

export class ProviderError extends Error {
  override name = "ProviderError";
  readonly kind: ProviderErrorKind;
  /** HTTP status when there was one. */
  readonly status: number | null;
  /** The provider's (or runner's) error code, e.g. `conflict`, `runner_ingress_bind_conflict`. */
  readonly code: string | null;
  /** What was being done, e.g. `GET /sandbox/rw-create-op-1`. */
  readonly operation: string;

  constructor(
    kind: ProviderErrorKind,
    operation: string,
    message: string,
    extra: { status?: number | null; code?: string | null; cause?: unknown } = {},
  ) {
    super(`${operation}: ${message}`, extra.cause === undefined ? undefined : { cause: extra.cause });
    this.kind = kind;
    this.operation = operation;
    this.status = extra.status ?? null;
    this.code = extra.code ?? null;
  }

  static is(err: unknown): err is ProviderError {
    return err instanceof ProviderError;
  }
}
