import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { setTimeout } from "node:timers/promises";
import { z } from "zod";
import { ProviderError } from "./errors";
import { decodeJson, httpFailure, send, SKIP_ACTIVITY_HEADERS, validate, type HttpResponse } from "./http";
import { parseRunnerReleases, protocolOf, RELEASES_FILE, releasesFor } from "./runner-releases";
import type { RunnerReleases } from "../engine/recovery-walk";

/**
 * The agent runner inside a sandbox (`runner/runnerd.mjs`), reached only through Daytona's
 * toolbox API by sandbox id (docs/runner.md, docs/daytona.md): the program is uploaded with `files/bulk-upload`,
 * every operation is one `process/execute` of `node runnerd ctl OP` printing one marked JSON
 * line, and the runner state is read back with `files/download`. Every path comes from the
 * sandbox's own home (`GET /user-home-dir`). The same code drives real Daytona and the
 * emulator.
 */

/** Paths relative to the sandbox user's home (the provider's readFile resolves them). */
export const RUNNER_ROOT = ".runwarden/runner";
export const RUNNER_STATE_PATH = `${RUNNER_ROOT}/runner-state.json`;
/** Written beside the runner state once a provider session exists. */
export const PROVIDER_STATE_PATH = `${RUNNER_ROOT}/provider-state.json`;
/** Where a bootstrap restart moves the old runner state (kept for inspection). */
export function bootstrapRestartPath(n: number): string {
  return `${RUNNER_ROOT}/.bootstrap-restart-${n}/runner-state.json`;
}
/** The work directory turns run in, under the home. */
export const WORK_DIR = "work";
/** The file the demo agent appends one line to per turn, in the work dir. */
export const DEMO_MARKER_FILE = "runwarden-demo-marker.txt";
/** What the demo agent reads as its sleep before each turn's work, in ms (runner/demo-agent.mjs). */
export const DEMO_SLEEP_ENV = "RUNWARDEN_DEMO_SLEEP_MS";

/**
 * The command each turn runs for a run that names none: the demo agent uploaded at `path`,
 * with the run's sleep (`runs.demo_sleep_ms`) in its environment when it has one. The runner
 * keeps the command in its state, so a resumed runner sleeps the same.
 */
export function demoAgentCommand(path: string, sleepMs: number | null | undefined): string {
  const node = `node ${shellQuote(path)}`;
  return sleepMs ? `${DEMO_SLEEP_ENV}=${Math.trunc(sleepMs)} ${node}` : node;
}
/** In a real sandbox every runner listens here (its own network), so a second live runner cannot bind (seed 001). */
export const RUNNER_INGRESS_PORT = 43127;
const RESULT_PREFIX = "RUNWARDEN_RESULT ";
/** What `peekProcess` prints when the sandbox has a procfs. */
const PROCFS_MARK = "RUNWARDEN_PROCFS";

// The runner's vocabulary and its wire shapes are the engine's (docs/rules.md §1,
// docs/runner.md), defined once there in server/engine/runner-state.ts.
import { PROVIDER_FAILURE_KINDS, RUNNER_LIFECYCLES } from "../engine/schemas";
import {
  PROVIDER_FAILURE_CATEGORIES,
  processedCommandSchema,
  providerFailureSchema,
  runnerProcessIdentitySchema,
  runnerProcessSchema,
  runnerWireStateSchema,
  type ProcessedCommand,
  type ProviderFailure,
  type RunnerProcess,
  type RunnerWireState,
} from "../engine/runner-state";
export { RUNNER_LIFECYCLES, PROVIDER_FAILURE_KINDS, PROVIDER_FAILURE_CATEGORIES, providerFailureSchema, runnerProcessIdentitySchema, processedCommandSchema, runnerProcessSchema };
export type { ProviderFailure, ProcessedCommand, RunnerProcess };
export type RunnerLifecycle = (typeof RUNNER_LIFECYCLES)[number];

/** `runner-state.json` as runnerd writes it: the engine's wire state (docs/runner.md "The state file"). */
export const runnerStateSchema = runnerWireStateSchema;
export type RunnerState = RunnerWireState;

/** Parses a runner-state.json text; a file that is not one is a `garbage` ProviderError. */
export function parseRunnerState(text: string, where = RUNNER_STATE_PATH): RunnerState {
  let value: unknown;
  try {
    value = JSON.parse(text) as unknown;
  } catch {
    throw new ProviderError("garbage", `read ${where}`, "the runner state is not JSON");
  }
  return validate(`read ${where}`, value, runnerStateSchema, "the runner state");
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
  /** What each turn runs in the work dir; none → the demo agent shipped in runner/. */
  agentCommand?: string | null;
  /** The demo agent's sleep before each turn's work (ms), when there is no agentCommand. */
  demoSleepMs?: number | null;
  /** Run by session.open; a definite provider failure it reports fails the open. */
  sessionCommand?: string | null;
}

export interface TurnResult {
  state: RunnerState;
  /** The runner's record of this turn (exit code, output tail). */
  command: ProcessedCommand;
}

export type SessionOpenResult =
  | { ok: true; state: RunnerState }
  /** The provider refused the session: a definite failure (docs/rules.md §2.3). */
  | { ok: false; definite: true; providerFailure: ProviderFailure; message: string }
  /** No answer within the caller's bound; the runner may still be `connecting`. */
  | { ok: false; definite: false; reason: "timeout"; message: string };

/** How long past a turn's budget the controller keeps polling for the runner's record (the runner's kill grace, its write, a round trip). */
export const TURN_DEADLINE_MARGIN_MS = 30_000;
/** One `ctl turn` long poll's wait (ms): well under the toolbox proxy's timeout (docs/runner.md: ≤ 25 s). */
export const TURN_LONG_POLL_WAIT_MS = 15_000;
/** How often a turn still running is long-polled through `ctl turn` (ms); the runner's record is read in between. */
export const TURN_LONG_POLL_EVERY_MS = 60_000;
/** How often the runner's record of a turn still running is read between two long polls (ms). */
export const TURN_READ_EVERY_MS = 2_000;

export interface TurnOptions extends RunnerCallOptions {
  prompt?: string;
  /**
   * The turn's budget (ms), sent with the turn: past it the runner kills the agent's process
   * group and records the turn as timed out. With it, the poll itself is bounded too.
   */
  budgetMs?: number;
  /** How long past the budget the poll goes on before it gives up (default TURN_DEADLINE_MARGIN_MS). */
  deadlineMarginMs?: number;
}

/**
 * The runner gave no record of the turn within its budget plus the margin (a hung runner,
 * or a sandbox that stopped answering): the controller stops polling (docs/rules.md "Turns").
 */
export class TurnDeadlineError extends Error {
  constructor(
    readonly seq: number,
    readonly deadlineMs: number,
    readonly waitedMs: number,
    readonly lastError: string | null,
  ) {
    super(`turn ${seq}: the runner gave no record within ${deadlineMs} ms${lastError ? ` (last: ${lastError})` : ""}`);
    this.name = "TurnDeadlineError";
  }

  static is(err: unknown): err is TurnDeadlineError {
    return err instanceof TurnDeadlineError;
  }
}

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
  /**
   * Resumes a dead runner on its own state (`resume_dead_runner`, after the engine's
   * `runner_resume` proof): a new process, the same session, seq and processed turns. The
   * runner refuses (`runner_not_resumable`) a turn cut short or another runner's state.
   */
  resume(sandboxId: string, input: Omit<StartRunnerInput, "agentCommand" | "sessionCommand">, options?: RunnerCallOptions): Promise<RunnerState>;
  /** session.open: `ready`, protocol 1; or a definite provider failure; or a timeout. */
  sessionOpen(sandboxId: string, options: RunnerCallOptions & { timeoutMs: number }): Promise<SessionOpenResult>;
  /** Reconnects a controller to a live runner (after a restart): `ready`, reconnectCount + 1. */
  reattach(sandboxId: string, options?: RunnerCallOptions): Promise<RunnerState>;
  /**
   * One turn: runs the agent command; a seq already processed is answered from its record,
   * never run twice. With a budget, throws TurnDeadlineError when no record came within the
   * budget plus the margin.
   */
  turn(sandboxId: string, seq: number, options?: TurnOptions): Promise<TurnResult>;
  /** Graceful drain: lifecycle `suspended`, the process stays up for a reattach. */
  suspend(sandboxId: string, options?: RunnerCallOptions): Promise<RunnerState>;
  /** Lifecycle `stopped` and the runner process exits. Null when no runner was ever started. */
  stop(sandboxId: string, options?: RunnerCallOptions): Promise<RunnerState | null>;
  /** The runner process: `running`, `stopped` (it exited), or `absent` (never started). */
  process(sandboxId: string, options?: RunnerCallOptions): Promise<RunnerProcess>;
  /** runner-state.json, or null when there is none. A look: not the sandbox's activity (Daytona's auto-stop). */
  readState(sandboxId: string, options?: RunnerCallOptions): Promise<RunnerState | null>;
  /**
   * A read-only look at one process in the sandbox for the restart forecast (§2.12): its
   * `/proc/PID/stat` line (null when there is none) and whether the sandbox has a procfs.
   * Unlike `process` it uploads nothing and runs no runnerd: one `cat` through
   * `process/execute`, which writes nothing and changes no runner — and, sent with
   * `X-Daytona-Skip-Last-Activity-Update`, is not the sandbox's activity: a forecast keeps no
   * dead run's sandbox from its auto-stop.
   */
  peekProcess(sandboxId: string, pid: number, options?: RunnerCallOptions): Promise<{ procfs: boolean; stat: string | null }>;
}

export interface HttpRunnerClientOptions {
  apiKey: string;
  /** The sandbox's toolbox proxy base, or null when the sandbox does not exist. */
  toolboxUrl: (sandboxId: string, options?: { signal?: AbortSignal }) => Promise<string | null>;
  timeoutMs?: number;
  /** How a turn still running is polled (ms; defaults TURN_LONG_POLL_WAIT_MS, TURN_LONG_POLL_EVERY_MS, TURN_READ_EVERY_MS). */
  turnPoll?: Partial<TurnPoll>;
  /**
   * Whether the provider's API says the sandbox is gone: asked when the toolbox answers 400,
   * 401 or 404, since a deleted sandbox's toolbox answers 401 or 400 once the proxy's caches
   * forget it (docs/daytona.md "The toolbox"). Without it such an answer stays an error.
   */
  sandboxGone?: (sandboxId: string, options?: { signal?: AbortSignal }) => Promise<boolean>;
}

export interface TurnPoll {
  longPollWaitMs: number;
  longPollEveryMs: number;
  readEveryMs: number;
}

interface Program {
  name: string;
  text: Buffer;
  sha: string;
  /** The file it was read from. */
  file: string;
}

/** runner/*.mjs, read once; found from this module or from the working directory. */
function loadProgram(name: string): Program {
  const candidates = [
    ...(import.meta.dirname ? [path.resolve(import.meta.dirname, "../../runner", name)] : []),
    path.resolve(process.cwd(), "runner", name),
  ];
  for (const file of candidates) {
    if (fs.existsSync(file)) {
      const text = fs.readFileSync(file);
      return { name, text, sha: crypto.createHash("sha256").update(text).digest("hex").slice(0, 16), file };
    }
  }
  throw new Error(`runner program ${name} not found (looked in ${candidates.join(", ")})`);
}

/** The digest of the runnerd program this controller uploads (the name a runner's state gives as its `programDigest`). */
export function runnerProgramDigest(): string {
  return runnerPrograms().runnerd.sha;
}

/** The runnerd program this controller ships: its digest and the protocol it declares (what its `controller_processes` row records). */
export function shippedRunnerProgram(): { digest: string; protocol: number } {
  const { runnerd } = runnerPrograms();
  return { digest: runnerd.sha, protocol: protocolOf(runnerd.text.toString("utf8")) };
}

let releases: RunnerReleases | null = null;
/**
 * The runner programs this controller drives (§2.1): runner/releases.json beside the runnerd.mjs
 * it ships, and its protocol window. A manifest that is missing or malformed stops the caller
 * with the file named; the program shipped is always its own release.
 */
export function runnerReleases(): RunnerReleases {
  if (releases) return releases;
  const { runnerd } = runnerPrograms();
  const file = path.join(path.dirname(runnerd.file), RELEASES_FILE);
  const manifest = parseRunnerReleases(fs.readFileSync(file, "utf8"), file);
  releases = releasesFor(manifest, shippedRunnerProgram());
  return releases;
}

let programs: { runnerd: Program; demo: Program } | null = null;
function runnerPrograms() {
  programs ??= { runnerd: loadProgram("runnerd.mjs"), demo: loadProgram("demo-agent.mjs") };
  return programs;
}

const resultLineSchema = z.object({ ok: z.boolean(), code: z.string().optional(), message: z.string().optional() }).passthrough();
const executeAnswerSchema = z.object({ exitCode: z.number().int(), result: z.string() });
const stateResultSchema = z.object({ state: runnerStateSchema });
const maybeStateResultSchema = z.object({ state: runnerStateSchema.nullable() });
const processResultSchema = z.object({ process: runnerProcessSchema });
/** Lenient on purpose: an answer without its record is read from the state (the engine's `turnAnswerSchema` is what runnerd prints). */
const turnAnswerSchema = z.object({ state: runnerStateSchema, pending: z.boolean().optional(), command: processedCommandSchema.optional() });
const rejectResultSchema = z.object({ definite: z.boolean().optional(), providerFailure: providerFailureSchema.optional(), message: z.string().optional() });

/** What the toolbox answers for a sandbox that may have been deleted (Daytona's proxy: 404, then 401 or 400). */
const GONE_MAYBE: ReadonlySet<number> = new Set([400, 401, 404]);

/** Runner refusals that mean "not there" rather than "in the way". */
const NOT_FOUND_CODES = new Set(["runner_state_missing"]);

export function shellQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

export class HttpRunnerClient implements RunnerClient {
  private readonly apiKey: string;
  private readonly toolboxUrl: HttpRunnerClientOptions["toolboxUrl"];
  private readonly sandboxGone: HttpRunnerClientOptions["sandboxGone"];
  private readonly timeoutMs: number;
  private readonly turnPoll: TurnPoll;
  private readonly homes = new Map<string, string>();
  private readonly installed = new Map<string, string>();

  constructor(options: HttpRunnerClientOptions) {
    this.apiKey = options.apiKey;
    this.toolboxUrl = options.toolboxUrl;
    this.sandboxGone = options.sandboxGone;
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.turnPoll = { longPollWaitMs: TURN_LONG_POLL_WAIT_MS, longPollEveryMs: TURN_LONG_POLL_EVERY_MS, readEveryMs: TURN_READ_EVERY_MS, ...options.turnPoll };
  }

  async start(sandboxId: string, input: StartRunnerInput, options: RunnerCallOptions = {}): Promise<RunnerState> {
    const bin = await this.install(sandboxId, options);
    const agentCommand = input.agentCommand || demoAgentCommand(`${bin}/demo-agent-${runnerPrograms().demo.sha}.mjs`, input.demoSleepMs);
    const args = ["start", "--run", input.runId, "--instance", input.runnerInstanceId, "--session", input.sessionId, "--agent-command", agentCommand];
    if (input.sessionCommand) args.push("--session-command", input.sessionCommand);
    const out = await this.runnerd(sandboxId, "runnerd start", args, options);
    return validate("runnerd start", out, stateResultSchema).state;
  }

  async resume(sandboxId: string, input: Omit<StartRunnerInput, "agentCommand" | "sessionCommand">, options: RunnerCallOptions = {}): Promise<RunnerState> {
    const args = ["start", "--resume", "--run", input.runId, "--instance", input.runnerInstanceId, "--session", input.sessionId];
    return validate("runnerd start --resume", await this.runnerd(sandboxId, "runnerd start --resume", args, options), stateResultSchema).state;
  }

  async sessionOpen(sandboxId: string, options: RunnerCallOptions & { timeoutMs: number }): Promise<SessionOpenResult> {
    const operation = "runnerd ctl session-open";
    let out: Record<string, unknown>;
    try {
      out = await this.runnerd(sandboxId, operation, ["ctl", "session-open", "--wait-ms", String(options.timeoutMs)], { ...options, timeoutMs: options.timeoutMs + 15_000 }, true);
    } catch (err) {
      // A 408 or no answer is not definite: the runner may still be connecting.
      if (ProviderError.is(err) && (err.kind === "timeout" || err.status === 408)) {
        return { ok: false, definite: false, reason: "timeout", message: `session.open did not answer within ${options.timeoutMs} ms` };
      }
      throw err;
    }
    if (out.ok === true) return { ok: true, state: validate(operation, out, stateResultSchema).state };
    if (out.code === "session_open_pending") {
      return { ok: false, definite: false, reason: "timeout", message: `session.open did not answer within ${options.timeoutMs} ms` };
    }
    const reject = validate(operation, out, rejectResultSchema);
    if (reject.definite && reject.providerFailure) {
      return { ok: false, definite: true, providerFailure: reject.providerFailure, message: reject.message ?? reject.providerFailure.message };
    }
    throw refusal(operation, out);
  }

  async reattach(sandboxId: string, options: RunnerCallOptions = {}): Promise<RunnerState> {
    return validate("runnerd ctl reattach", await this.runnerd(sandboxId, "runnerd ctl reattach", ["ctl", "reattach"], options), stateResultSchema).state;
  }

  async turn(sandboxId: string, seq: number, options: TurnOptions = {}): Promise<TurnResult> {
    const operation = `runnerd ctl turn --seq ${seq}`;
    const { prompt, budgetMs, deadlineMarginMs, ...call } = options;
    const budget = budgetMs !== undefined && budgetMs > 0 ? Math.floor(budgetMs) : null;
    // The poll is bounded when the turn is: past the budget plus the margin it gives up, even
    // in the middle of a call (a runner that hangs never answers).
    const deadlineMs = budget === null ? null : budget + (deadlineMarginMs ?? TURN_DEADLINE_MARGIN_MS);
    const started = Date.now();
    const deadline = deadlineMs === null ? null : AbortSignal.timeout(deadlineMs);
    const signal = deadline && call.signal ? AbortSignal.any([call.signal, deadline]) : (deadline ?? call.signal);
    const gaveUp = (err: unknown) => {
      if (!deadline?.aborted || call.signal?.aborted) return null;
      return new TurnDeadlineError(seq, deadlineMs!, Date.now() - started, err instanceof Error ? err.message : null);
    };
    const args = ["ctl", "turn", "--seq", String(seq), "--prompt", prompt ?? "", ...(budget === null ? [] : ["--timeout-ms", String(budget)])];
    const recordIn = (state: RunnerState) =>
      state.processedCommands.map((c) => processedCommandSchema.safeParse(c)).find((c) => c.success && c.data.seq === seq)?.data;
    // A long turn is polled: a `ctl turn` long poll (same seq: never run twice) stays well under
    // the proxy's timeout and is a process in the sandbox (~0.1 s of CPU), so between two of
    // them the runner's record is read with files/download, a plain file read. The long poll
    // still comes every TURN_LONG_POLL_EVERY_MS: it is what finds a runner that died.
    let lastLongPoll = -Infinity;
    for (;;) {
      const left = deadlineMs === null ? Infinity : deadlineMs - (Date.now() - started);
      if (Date.now() - lastLongPoll >= this.turnPoll.longPollEveryMs) {
        const waitMs = Math.max(1_000, Math.min(this.turnPoll.longPollWaitMs, left));
        let out: Record<string, unknown>;
        try {
          out = await this.runnerd(sandboxId, operation, [...args, "--wait-ms", String(waitMs)], { ...call, signal, timeoutMs: call.timeoutMs ?? Math.max(this.timeoutMs, waitMs + 10_000) });
        } catch (err) {
          throw gaveUp(err) ?? err;
        }
        lastLongPoll = Date.now();
        const answer = validate(operation, out, turnAnswerSchema);
        if (!answer.pending) {
          const command = answer.command ?? recordIn(answer.state);
          if (!command) throw new ProviderError("garbage", operation, `the runner answered without a record of turn ${seq}`);
          return { state: answer.state, command };
        }
      } else {
        let state: RunnerState | null;
        try {
          await setTimeout(Math.max(0, Math.min(this.turnPoll.readEveryMs, left)), undefined, { signal });
          state = await this.readState(sandboxId, { ...call, signal });
        } catch (err) {
          throw gaveUp(err) ?? err;
        }
        const command = state ? recordIn(state) : undefined;
        if (state && command) return { state, command };
      }
      const late = gaveUp(null);
      if (late) throw late;
    }
  }

  async suspend(sandboxId: string, options: RunnerCallOptions = {}): Promise<RunnerState> {
    return validate("runnerd ctl suspend", await this.runnerd(sandboxId, "runnerd ctl suspend", ["ctl", "suspend"], options), stateResultSchema).state;
  }

  async stop(sandboxId: string, options: RunnerCallOptions = {}): Promise<RunnerState | null> {
    return validate("runnerd ctl stop", await this.runnerd(sandboxId, "runnerd ctl stop", ["ctl", "stop"], options), maybeStateResultSchema).state;
  }

  async process(sandboxId: string, options: RunnerCallOptions = {}): Promise<RunnerProcess> {
    return validate("runnerd ctl process", await this.runnerd(sandboxId, "runnerd ctl process", ["ctl", "process"], options), processResultSchema).process;
  }

  async peekProcess(sandboxId: string, pid: number, options: RunnerCallOptions = {}): Promise<{ procfs: boolean; stat: string | null }> {
    const operation = `process/execute cat /proc/${pid}/stat`;
    const httpTimeoutMs = options.timeoutMs ?? this.timeoutMs;
    const command = `cat /proc/${Math.trunc(pid)}/stat 2>/dev/null; echo; [ -r /proc/self/stat ] && echo ${PROCFS_MARK}`;
    const res = await this.toolbox(sandboxId, "POST", "process/execute", operation, options, {
      body: { command, timeout: Math.max(1, Math.floor(httpTimeoutMs / 1000) - 2) },
      timeoutMs: httpTimeoutMs,
      look: true,
    });
    if (res.status === 408) throw new ProviderError("timeout", operation, "the command did not finish in time (HTTP 408)", { status: 408, scope: "toolbox" });
    if (res.status < 200 || res.status >= 300) throw httpFailure(operation, res);
    const lines = validate(operation, decodeJson(operation, res), executeAnswerSchema, "the process/execute answer").result.split("\n");
    const stat = lines.find((l) => l.startsWith(`${Math.trunc(pid)} (`)) ?? null;
    return { procfs: lines.some((l) => l.trim() === PROCFS_MARK), stat };
  }

  /** runner-state.json through `files/download`; a 404 is "no state" only when the sandbox answers /version right after. */
  async readState(sandboxId: string, options: RunnerCallOptions = {}): Promise<RunnerState | null> {
    const home = await this.home(sandboxId, options);
    const operation = "GET files/download runner-state.json";
    const res = await this.toolbox(sandboxId, "GET", `files/download?path=${encodeURIComponent(`${home}/${RUNNER_STATE_PATH}`)}`, operation, options, { look: true });
    if (res.status === 404) {
      const version = await this.toolbox(sandboxId, "GET", "version", "GET /version", options, { look: true });
      if (version.status >= 200 && version.status < 300) return null;
      throw new ProviderError("http", operation, `404, and the sandbox does not answer /version (HTTP ${version.status}): it may be gone`, { status: 404, code: "sandbox_not_found" });
    }
    if (res.status < 200 || res.status >= 300) throw httpFailure(operation, res);
    return parseRunnerState(res.body.toString("utf8"));
  }

  /** The sandbox user's home, from the sandbox (cached per sandbox). */
  private async home(sandboxId: string, options: RunnerCallOptions): Promise<string> {
    const cached = this.homes.get(sandboxId);
    if (cached) return cached;
    const operation = "GET /user-home-dir";
    const res = await this.toolbox(sandboxId, "GET", "user-home-dir", operation, options, { look: true });
    if (res.status < 200 || res.status >= 300) throw httpFailure(operation, res);
    const dir = validate(operation, decodeJson(operation, res), z.object({ dir: z.string().min(1) })).dir.replace(/\/+$/, "");
    this.homes.set(sandboxId, dir);
    return dir;
  }

  /** Uploads runnerd and the demo agent once per sandbox and program hash; returns their directory. */
  private async install(sandboxId: string, options: RunnerCallOptions): Promise<string> {
    const { runnerd, demo } = runnerPrograms();
    const key = `${runnerd.sha}:${demo.sha}`;
    const home = await this.home(sandboxId, options);
    const bin = `${home}/.runwarden/bin`;
    if (this.installed.get(sandboxId) === key) return bin;
    const form = new FormData();
    [runnerd, demo].forEach((p, i) => {
      const base = p === runnerd ? "runnerd" : "demo-agent";
      form.append(`files[${i}].path`, `${bin}/${base}-${p.sha}.mjs`);
      form.append(`files[${i}].file`, new Blob([new Uint8Array(p.text)]), `${base}.mjs`);
    });
    const operation = "POST /files/bulk-upload (runnerd)";
    const res = await this.toolbox(sandboxId, "POST", "files/bulk-upload", operation, options, { form });
    if (res.status < 200 || res.status >= 300) throw httpFailure(operation, res);
    this.installed.set(sandboxId, key);
    return bin;
  }

  /**
   * One runnerd command through `process/execute`; returns its result line. A refusal
   * (`ok: false`) is thrown as a ProviderError with the runner's code, unless `raw`.
   */
  private async runnerd(sandboxId: string, operation: string, args: string[], options: RunnerCallOptions, raw = false): Promise<Record<string, unknown>> {
    const bin = await this.install(sandboxId, options);
    const home = await this.home(sandboxId, options);
    const command = ["node", `${bin}/runnerd-${runnerPrograms().runnerd.sha}.mjs`, ...args].map(shellQuote).join(" ");
    const httpTimeoutMs = options.timeoutMs ?? this.timeoutMs;
    // The command's own bound stays under the HTTP one, so the sandbox answers 408 first.
    const timeout = Math.max(1, Math.floor(httpTimeoutMs / 1000) - 2);
    const res = await this.toolbox(sandboxId, "POST", "process/execute", operation, options, {
      body: { command, cwd: home, timeout },
      timeoutMs: httpTimeoutMs,
    });
    if (res.status === 408) throw new ProviderError("timeout", operation, `the command did not finish within ${timeout} s (HTTP 408)`, { status: 408, scope: "toolbox" });
    if (res.status < 200 || res.status >= 300) throw httpFailure(operation, res);
    const answer = validate(operation, decodeJson(operation, res), executeAnswerSchema, "the process/execute answer");
    const line = answer.result.split("\n").reverse().find((l) => l.startsWith(RESULT_PREFIX));
    // The shell found no node to run runnerd with: the sandbox's image lacks it (docs/daytona.md "No `node`").
    if (!line && answer.exitCode === 127 && /\bnode\b.*(not found|No such file)/i.test(answer.result)) {
      throw new ProviderError("garbage", operation, `the sandbox has no node on its PATH (exit 127: ${answer.result.trim().slice(-200)})`, { code: RUNNER_NODE_MISSING });
    }
    if (!line) {
      throw new ProviderError("garbage", operation, `runnerd printed no result line (exit ${answer.exitCode}): ${answer.result.slice(-300).trim() || "no output"}`);
    }
    let value: unknown;
    try {
      value = JSON.parse(line.slice(RESULT_PREFIX.length)) as unknown;
    } catch {
      throw new ProviderError("garbage", operation, `runnerd's result line is not JSON: ${line.slice(0, 200)}`);
    }
    const out = validate(operation, value, resultLineSchema, "runnerd's result") as Record<string, unknown>;
    if (out.ok !== true && !raw) throw refusal(operation, out);
    return out;
  }

  private async toolbox(
    sandboxId: string,
    method: "GET" | "POST",
    route: string,
    operation: string,
    options: RunnerCallOptions,
    /** `look`: the call only reads, so it is not the sandbox's activity (SKIP_ACTIVITY_HEADERS); a runnerd command or an upload is. */
    extra: { body?: unknown; form?: FormData; timeoutMs?: number; look?: boolean } = {},
  ): Promise<HttpResponse> {
    const toolbox = await this.toolboxUrl(sandboxId, { signal: options.signal });
    if (toolbox === null) {
      throw new ProviderError("http", operation, `sandbox ${sandboxId} does not exist`, { status: 404, code: "sandbox_not_found" });
    }
    const res = await send({
      method,
      url: `${toolbox}/${encodeURIComponent(sandboxId)}/${route}`,
      operation,
      apiKey: this.apiKey,
      body: extra.body,
      form: extra.form,
      headers: extra.look ? SKIP_ACTIVITY_HEADERS : undefined,
      timeoutMs: extra.timeoutMs ?? options.timeoutMs ?? this.timeoutMs,
      signal: options.signal,
    });
    if (GONE_MAYBE.has(res.status) && this.sandboxGone && (await this.sandboxGone(sandboxId, { signal: options.signal }))) {
      this.homes.delete(sandboxId);
      this.installed.delete(sandboxId);
      throw new ProviderError("http", operation, `sandbox ${sandboxId} does not exist (its toolbox answered ${res.status})`, { status: 404, code: "sandbox_not_found" });
    }
    return res;
  }
}

function refusal(operation: string, out: Record<string, unknown>): ProviderError {
  const code = typeof out.code === "string" ? out.code : "runner_error";
  const message = typeof out.message === "string" ? out.message : "the runner refused";
  return new ProviderError("http", operation, message, { status: NOT_FOUND_CODES.has(code) ? 404 : 409, code });
}

export function createRunnerClient(options: HttpRunnerClientOptions): RunnerClient {
  return new HttpRunnerClient(options);
}

/** The code of the error a sandbox without `node` gives every runner call. */
export const RUNNER_NODE_MISSING = "runner_node_missing";

/** True when the sandbox could not run the runner for want of `node`. */
export function isNodeMissing(err: unknown): boolean {
  return ProviderError.is(err) && err.code === RUNNER_NODE_MISSING;
}

/** True for the runner's "ingress port already bound" refusal. */
export function isBindConflict(err: unknown): boolean {
  return ProviderError.is(err) && err.code === "runner_ingress_bind_conflict";
}
