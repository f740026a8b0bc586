import { z } from "zod";
import { ProviderError } from "./errors";
import { decodeJson, httpFailure, send, validate, type HttpResponse } from "./http";

/**
 * The agent runner inside a sandbox, reached through the sandbox's toolbox proxy.
 *
 * Limitation: only the provider emulator implements these runner endpoints
 * (`{toolbox}/{sandboxId}/runner/*`). Real Daytona has no Runwarden runner; against it the
 * runner would have to be installed and driven through Daytona's process API, which this
 * module does not do. The runner *state file* is read through the provider's ordinary file
 * download (`readRunnerState`), which works against both.
 */

export const RUNNER_ROOT = "/home/sandbox/.runwarden/runner";
export const RUNNER_STATE_PATH = `${RUNNER_ROOT}/runner-state.json`;
/** Written beside the runner state once a provider session exists. */
export const PROVIDER_STATE_PATH = `${RUNNER_ROOT}/provider-state.json`;
/** Where a bootstrap restart moves the old runner state (kept for inspection). */
export function bootstrapRestartPath(n: number): string {
  return `${RUNNER_ROOT}/.bootstrap-restart-${n}/runner-state.json`;
}
/** Every runner on a sandbox listens here, so a second live runner cannot bind (seed 001). */
export const RUNNER_INGRESS_PORT = 43127;

// The runner's vocabulary is the engine's (DOMAIN.md §1), defined once there.
import { PROVIDER_FAILURE_KINDS, RUNNER_LIFECYCLES } from "../engine/schemas";
export { RUNNER_LIFECYCLES, PROVIDER_FAILURE_KINDS };
export type RunnerLifecycle = (typeof RUNNER_LIFECYCLES)[number];
export const PROVIDER_FAILURE_CATEGORIES = ["authentication", "permission", "invalid_request"] as const;

export const ProviderFailureSchema = z.object({
  kind: z.enum(PROVIDER_FAILURE_KINDS),
  category: z.enum(PROVIDER_FAILURE_CATEGORIES).nullable(),
  message: z.string(),
});
/** A provider failure as the engine's `startup_failure` evidence takes it (EVIDENCE.md). */
export type ProviderFailure = z.infer<typeof ProviderFailureSchema>;

export const RunnerProcessIdentitySchema = z.object({ pid: z.number().int(), startedAt: z.string() });

/** `runner-state.json` (DOMAIN.md §1 Runner state); the EVIDENCE.md `runnerState` fields plus extras. */
export const RunnerStateSchema = z.object({
  runId: z.string(),
  runnerInstanceId: z.string(),
  sessionId: z.string(),
  lifecycle: z.enum(RUNNER_LIFECYCLES),
  lastConnectionProtocolVersion: z.number().int().nullable(),
  lastControllerCommandSeq: z.number().int().min(0),
  reconnectCount: z.number().int().min(0),
  outbox: z.array(z.unknown()),
  processedCommands: z.array(z.unknown()),
  pendingTerminalDelivery: z.unknown().nullable(),
  /** Whether provider session state exists beside the runner state. */
  providerStatePresent: z.boolean(),
  /** The runner process that wrote this state. */
  process: RunnerProcessIdentitySchema.nullable(),
  updatedAt: z.string(),
});
export type RunnerState = z.infer<typeof RunnerStateSchema>;

export const RunnerProcessSchema = z.object({
  state: z.enum(["running", "stopped", "absent"]),
  pid: z.number().int().optional(),
  startedAt: z.string().optional(),
});
export type RunnerProcess = z.infer<typeof RunnerProcessSchema>;

/** Parses a runner-state.json text; a file that is not one is a `garbage` ProviderError. */
export function parseRunnerState(text: string, where = RUNNER_STATE_PATH): RunnerState {
  let value: unknown;
  try {
    value = JSON.parse(text) as unknown;
  } catch {
    throw new ProviderError("garbage", `read ${where}`, "the runner state is not JSON");
  }
  return validate(`read ${where}`, value, RunnerStateSchema, "the runner state");
}

/** Reads the runner state through any provider's file read; null when absent. */
export async function readRunnerState(
  provider: { readFile(sandboxId: string, path: string, options?: { signal?: AbortSignal }): Promise<string | null> },
  sandboxId: string,
  options: { signal?: AbortSignal } = {},
): Promise<RunnerState | null> {
  const text = await provider.readFile(sandboxId, RUNNER_STATE_PATH, options);
  return text === null ? null : parseRunnerState(text);
}

export interface StartRunnerInput {
  runId: string;
  runnerInstanceId: string;
  sessionId: string;
}

export type SessionOpenResult =
  | { ok: true; state: RunnerState }
  /** The provider refused the session: a definite failure (DOMAIN.md §2.3). */
  | { ok: false; definite: true; providerFailure: ProviderFailure; message: string }
  /** No answer within the caller's bound; the runner may still be `connecting`. */
  | { ok: false; definite: false; reason: "timeout"; message: string };

export interface RunnerCallOptions {
  signal?: AbortSignal;
  /** Overrides the client's request bound for this call. */
  timeoutMs?: number;
}

/**
 * Runner operations. Errors are ProviderErrors; the runner's own refusals carry `code`:
 * `runner_ingress_bind_conflict` (start: the ingress port is taken), `runner_not_running`,
 * `runner_not_ready`, `runner_state_missing`, `sandbox_not_found`, `sandbox_not_started`.
 */
export interface RunnerClient {
  /**
   * Starts a runner: writes runner-state.json with lifecycle `connecting`, protocol null,
   * seq 0. A start with a new runner instance id when an earlier runner is no longer
   * running is a bootstrap restart: the old state is moved to `.bootstrap-restart-<n>/`.
   */
  start(sandboxId: string, input: StartRunnerInput, options?: RunnerCallOptions): Promise<RunnerState>;
  /** session.open: `ready`, protocol 1; or a definite provider failure; or a timeout. */
  sessionOpen(sandboxId: string, options: RunnerCallOptions & { timeoutMs: number }): Promise<SessionOpenResult>;
  /** Reconnects a controller to a live runner (after a restart): `ready`, reconnectCount + 1. */
  reattach(sandboxId: string, options?: RunnerCallOptions): Promise<RunnerState>;
  /** One controller command; a seq already processed is not processed twice. */
  turn(sandboxId: string, seq: number, options?: RunnerCallOptions): Promise<RunnerState>;
  /** Graceful drain: lifecycle `suspended`, the process stays up for a reattach. */
  suspend(sandboxId: string, options?: RunnerCallOptions): Promise<RunnerState>;
  /** Lifecycle `stopped` and the runner process exits. Null when no runner was ever started. */
  stop(sandboxId: string, options?: RunnerCallOptions): Promise<RunnerState | null>;
  /** The runner process: `running`, `stopped` (it exited), or `absent` (never started). */
  process(sandboxId: string, options?: RunnerCallOptions): Promise<RunnerProcess>;
  /** runner-state.json, or null when there is none. */
  readState(sandboxId: string, options?: RunnerCallOptions): Promise<RunnerState | null>;
}

export interface HttpRunnerClientOptions {
  apiKey: string;
  /** The sandbox's toolbox proxy base, or null when the sandbox does not exist. */
  toolboxUrl: (sandboxId: string, options?: { signal?: AbortSignal }) => Promise<string | null>;
  timeoutMs?: number;
}

const StateEnvelope = z.object({ state: RunnerStateSchema });
const MaybeStateEnvelope = z.object({ state: RunnerStateSchema.nullable() });
const ProcessEnvelope = z.object({ process: RunnerProcessSchema });
const RejectBody = z.object({ definite: z.literal(true), providerFailure: ProviderFailureSchema, message: z.string().optional() });

export class HttpRunnerClient implements RunnerClient {
  private readonly apiKey: string;
  private readonly toolboxUrl: HttpRunnerClientOptions["toolboxUrl"];
  private readonly timeoutMs: number;

  constructor(options: HttpRunnerClientOptions) {
    this.apiKey = options.apiKey;
    this.toolboxUrl = options.toolboxUrl;
    this.timeoutMs = options.timeoutMs ?? 30_000;
  }

  async start(sandboxId: string, input: StartRunnerInput, options: RunnerCallOptions = {}): Promise<RunnerState> {
    const res = await this.request(sandboxId, "POST", "runner/start", input, options);
    return this.expect(res, "POST runner/start", StateEnvelope).state;
  }

  async sessionOpen(sandboxId: string, options: RunnerCallOptions & { timeoutMs: number }): Promise<SessionOpenResult> {
    const operation = "POST runner/session-open";
    let res: HttpResponse;
    try {
      res = await this.request(sandboxId, "POST", "runner/session-open", {}, options);
    } catch (err) {
      if (ProviderError.is(err) && err.kind === "timeout") {
        return { ok: false, definite: false, reason: "timeout", message: `session.open did not answer within ${options.timeoutMs} ms` };
      }
      throw err;
    }
    if (res.status === 422) {
      const body = decodeJson(operation, res);
      const parsed = RejectBody.safeParse(body);
      if (parsed.success) {
        const { providerFailure } = parsed.data;
        return { ok: false, definite: true, providerFailure, message: parsed.data.message ?? providerFailure.message };
      }
    }
    return { ok: true, state: this.expect(res, operation, StateEnvelope).state };
  }

  async reattach(sandboxId: string, options: RunnerCallOptions = {}): Promise<RunnerState> {
    const res = await this.request(sandboxId, "POST", "runner/reattach", {}, options);
    return this.expect(res, "POST runner/reattach", StateEnvelope).state;
  }

  async turn(sandboxId: string, seq: number, options: RunnerCallOptions = {}): Promise<RunnerState> {
    const res = await this.request(sandboxId, "POST", "runner/turn", { seq }, options);
    return this.expect(res, "POST runner/turn", StateEnvelope).state;
  }

  async suspend(sandboxId: string, options: RunnerCallOptions = {}): Promise<RunnerState> {
    const res = await this.request(sandboxId, "POST", "runner/suspend", {}, options);
    return this.expect(res, "POST runner/suspend", StateEnvelope).state;
  }

  async stop(sandboxId: string, options: RunnerCallOptions = {}): Promise<RunnerState | null> {
    const res = await this.request(sandboxId, "POST", "runner/stop", {}, options);
    return this.expect(res, "POST runner/stop", MaybeStateEnvelope).state;
  }

  async process(sandboxId: string, options: RunnerCallOptions = {}): Promise<RunnerProcess> {
    const res = await this.request(sandboxId, "GET", "runner/process", undefined, options);
    return this.expect(res, "GET runner/process", ProcessEnvelope).process;
  }

  async readState(sandboxId: string, options: RunnerCallOptions = {}): Promise<RunnerState | null> {
    const res = await this.request(sandboxId, "GET", `files/download?path=${encodeURIComponent(RUNNER_STATE_PATH)}`, undefined, options);
    if (res.status === 404) return null;
    if (res.status < 200 || res.status >= 300) throw httpFailure("GET runner-state.json", res);
    return parseRunnerState(res.body.toString("utf8"));
  }

  private async request(
    sandboxId: string,
    method: "GET" | "POST",
    path: string,
    body: unknown,
    options: RunnerCallOptions,
  ): Promise<HttpResponse> {
    const operation = `${method} ${path.split("?")[0]}`;
    const toolbox = await this.toolboxUrl(sandboxId, { signal: options.signal });
    if (toolbox === null) {
      throw new ProviderError("http", operation, `sandbox ${sandboxId} does not exist`, { status: 404, code: "sandbox_not_found" });
    }
    return send({
      method,
      url: `${toolbox}/${encodeURIComponent(sandboxId)}/${path}`,
      operation,
      apiKey: this.apiKey,
      body,
      timeoutMs: options.timeoutMs ?? this.timeoutMs,
      signal: options.signal,
    });
  }

  private expect<T>(res: HttpResponse, operation: string, schema: z.ZodType<T>): T {
    if (res.status < 200 || res.status >= 300) throw httpFailure(operation, res);
    return validate(operation, decodeJson(operation, res), schema);
  }
}

export function createRunnerClient(options: HttpRunnerClientOptions): RunnerClient {
  return new HttpRunnerClient(options);
}

/** True for the runner's "ingress port already bound" refusal. */
export function isBindConflict(err: unknown): boolean {
  return ProviderError.is(err) && err.code === "runner_ingress_bind_conflict";
}
