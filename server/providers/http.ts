import type { z } from "zod";
import { ProviderError, retryAfterMs } from "./errors";

/**
 * Plain `fetch` for the toolbox proxy (file reads, the emulated runner): the api-client
 * does not cover it. Every failure becomes a ProviderError that says what was wrong, scoped
 * `toolbox`: one sandbox's toolbox failing is that sandbox's trouble, not the provider's
 * outage (docs/rules.md §2.8).
 */

/**
 * Sent with every toolbox call that only looks (a file read, the home, `/version`, a process
 * peek): Daytona's proxy counts each request as the sandbox's activity, which resets its
 * auto-stop timer, unless the request carries this header set to `true` —
 * `daytonaio/daytona@v0.190.0 apps/proxy/pkg/proxy/get_sandbox_target.go` (`GetProxyTarget`
 * skips `updateLastActivity` when `Header.Get(SKIP_LAST_ACTIVITY_UPDATE_HEADER) == "true"`;
 * the name is in `apps/proxy/pkg/proxy/proxy.go`). A look must not keep a dead run's paid
 * sandbox awake (docs/daytona.md, Auto-stop): only the runner's work (runnerd commands, uploads)
 * is activity.
 */
export const SKIP_ACTIVITY_HEADERS: Readonly<Record<string, string>> = Object.freeze({ "X-Daytona-Skip-Last-Activity-Update": "true" });

export interface HttpRequest {
  method: "GET" | "POST" | "DELETE";
  url: string;
  /** e.g. `GET /files/download`, used in error messages. */
  operation: string;
  apiKey?: string;
  body?: unknown;
  /** A multipart body instead of JSON (the toolbox's bulk upload). */
  form?: FormData;
  /** Extra headers (e.g. `X-Daytona-Skip-Last-Activity-Update`). */
  headers?: Record<string, string>;
  timeoutMs: number;
  signal?: AbortSignal;
}

export interface HttpResponse {
  status: number;
  contentType: string;
  body: Buffer;
  /** The provider's own wait on a 429/503 (see retryAfterMs), in ms. */
  retryAfterMs?: number | null;
}

export async function send(req: HttpRequest): Promise<HttpResponse> {
  const timeout = AbortSignal.timeout(req.timeoutMs);
  const signal = req.signal ? AbortSignal.any([req.signal, timeout]) : timeout;
  const headers: Record<string, string> = { accept: "application/json, application/octet-stream;q=0.9, */*;q=0.1" };
  if (req.apiKey) headers.authorization = `Bearer ${req.apiKey}`;
  if (req.body !== undefined) headers["content-type"] = "application/json";
  Object.assign(headers, req.headers ?? {});
  try {
    const res = await fetch(req.url, {
      method: req.method,
      headers,
      body: req.form ?? (req.body === undefined ? undefined : JSON.stringify(req.body)),
      signal,
    });
    const body = Buffer.from(await res.arrayBuffer());
    const waitMs = res.status === 429 || res.status === 503 ? retryAfterMs((n) => res.headers.get(n), [...res.headers.keys()]) : null;
    return { status: res.status, contentType: res.headers.get("content-type") ?? "", body, retryAfterMs: waitMs };
  } catch (err) {
    throw fetchFailure(req, err, timeout);
  }
}

function fetchFailure(req: HttpRequest, err: unknown, timeout: AbortSignal): ProviderError {
  if (req.signal?.aborted) return new ProviderError("aborted", req.operation, "the caller aborted the request", { cause: err, scope: "toolbox" });
  if (timeout.aborted) {
    return new ProviderError("timeout", req.operation, `no answer within ${req.timeoutMs} ms`, { cause: err, scope: "toolbox" });
  }
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  const detail = cause?.code ?? cause?.message ?? (err as Error).message ?? String(err);
  return new ProviderError("unreachable", req.operation, `cannot reach ${originOf(req.url)} (${detail})`, { cause: err, scope: "toolbox" });
}

/** Parses a JSON answer against `schema`, or names what was wrong with it. */
export function parseJson<T>(operation: string, res: HttpResponse, schema: z.ZodType<T>): T {
  const value = decodeJson(operation, res);
  return validate(operation, value, schema);
}

export function decodeJson(operation: string, res: HttpResponse): unknown {
  const text = res.body.toString("utf8");
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new ProviderError(
      "garbage",
      operation,
      `expected JSON, got ${res.contentType || "no content type"} with status ${res.status}: ${snippet(text)}`,
      { status: res.status, scope: "toolbox" },
    );
  }
}

export function validate<T>(operation: string, value: unknown, schema: z.ZodType<T>, what = "the answer"): T {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const where = issue && issue.path.length ? issue.path.join(".") : "(root)";
  throw new ProviderError("garbage", operation, `${what} does not fit the API: ${where}: ${issue?.message ?? "invalid"}; got ${snippet(value)}`);
}

/** A non-2xx answer as a ProviderError carrying the provider's message and code when it sent them. */
export function httpFailure(operation: string, res: HttpResponse): ProviderError {
  const text = res.body.toString("utf8");
  let message = "";
  let code: string | null = null;
  try {
    const body = JSON.parse(text) as { message?: unknown; error?: unknown; code?: unknown };
    if (typeof body.message === "string") message = body.message;
    else if (Array.isArray(body.message)) message = body.message.join("; ");
    else if (typeof body.error === "string") message = body.error;
    if (typeof body.code === "string") code = body.code;
  } catch {
    // Not JSON: the snippet below says what came back.
  }
  return new ProviderError(
    "http",
    operation,
    `HTTP ${res.status}${message ? `: ${message}` : ` with ${res.contentType || "no content type"}: ${snippet(text)}`}`,
    { status: res.status, code, retryAfterMs: res.retryAfterMs ?? null, scope: "toolbox" },
  );
}

/** A short, one-line excerpt of whatever came back, for error messages. */
export function snippet(value: unknown, max = 120): string {
  let text: string;
  if (typeof value === "string") text = JSON.stringify(value.replace(/\s+/g, " ").trim());
  else if (value === undefined) text = "nothing";
  else {
    try {
      text = JSON.stringify(value) ?? String(value);
    } catch {
      text = String(value);
    }
  }
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return url;
  }
}
