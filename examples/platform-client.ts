/**
 * A platform's client of the Runwarden API (docs/api.md), with nothing but `fetch` and the
 * types openapi-typescript generates from docs/openapi.json (examples/api.d.ts, `npm run
 * api:openapi`). Copy it into a platform: submit a task's run with an idempotency key (a
 * retry after a timeout returns the same run), read it, Retry it when it is offered.
 * server/api/example-client.int.test.ts runs it against the real API.
 */
import type { operations } from "./api";

type Json<Op extends keyof operations, Status extends number> = operations[Op]["responses"] extends Record<Status, { content: { "application/json": infer T } }> ? T : never;

export type SubmitRun = NonNullable<operations["submitRun"]["requestBody"]>["content"]["application/json"];
export type SubmittedRun = Json<"submitRun", 201>;
export type Run = Json<"getRun", 200>;
export type RetryAnswer = Json<"retryRun", 200>;

export class RunwardenError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly field: string | null,
  ) {
    super(message);
  }
}

export interface ClientOptions {
  /** The dashboard's address, e.g. https://runwarden.example.com. */
  baseUrl: string;
  /** An API token, rw_… (created by an admin: the Tokens page or `runwarden token create`). */
  token: string;
  /** Per request (default 10 s): a submit that times out is simply sent again with the same key. */
  timeoutMs?: number;
  fetch?: typeof fetch;
}

export function runwardenClient(options: ClientOptions) {
  const f = options.fetch ?? fetch;
  async function request<T>(method: "GET" | "POST", path: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: T; replayed: boolean }> {
    const res = await f(`${options.baseUrl.replace(/\/$/, "")}/api/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${options.token}`, ...(body !== undefined ? { "content-type": "application/json" } : {}), ...headers },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      signal: AbortSignal.timeout(options.timeoutMs ?? 10_000),
    });
    const parsed = (await res.json()) as unknown;
    if (!res.ok) {
      const e = (parsed as { error?: { code?: string; message?: string; field?: string | null } }).error;
      throw new RunwardenError(res.status, e?.code ?? "INTERNAL", e?.message ?? `HTTP ${res.status}`, e?.field ?? null);
    }
    return { status: res.status, body: parsed as T, replayed: res.headers.get("idempotent-replayed") === "true" };
  }

  return {
    /** Submits a run; `key` makes it idempotent (use the platform's own id for this attempt). */
    async submit(input: SubmitRun, key: string): Promise<{ run: SubmittedRun; replayed: boolean }> {
      const r = await request<SubmittedRun>("POST", "/runs", input, { "idempotency-key": key });
      return { run: r.body, replayed: r.replayed };
    },
    /** Submits, sending again with the same key after a timeout or a 5xx: at most one run is made. */
    async submitSurely(input: SubmitRun, key: string, attempts = 5): Promise<{ run: SubmittedRun; replayed: boolean }> {
      for (let i = 1; ; i++) {
        try {
          return await this.submit(input, key);
        } catch (err) {
          const retriable = !(err instanceof RunwardenError) || err.status >= 500 || err.status === 429;
          if (!retriable || i >= attempts) throw err;
          await new Promise((r) => setTimeout(r, 200 * 2 ** i));
        }
      }
    },
    async get(runId: string): Promise<Run> {
      return (await request<Run>("GET", `/runs/${encodeURIComponent(runId)}`)).body;
    },
    /** Retry, when the run offers it (`retryOffered`): exactly one successor however often it is called. */
    async retry(runId: string): Promise<RetryAnswer> {
      return (await request<RetryAnswer>("POST", `/runs/${encodeURIComponent(runId)}/retry`)).body;
    },
  };
}
