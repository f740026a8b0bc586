import { z } from "zod";
import { PROVIDER_FAILURE_KINDS, runnerStateSchema } from "./schemas";

/**
 * What `runner/runnerd.mjs` prints and writes, as the controller reads it (docs/runner.md).
 * The engine's `runnerStateSchema` (schemas.ts) is the runner state as evidence takes it; the
 * wire state below extends it with the fields the controller needs more, and narrows the
 * protocol version to what runnerd writes. Every `ctl` answer has its schema here, so a change
 * of what runnerd prints is a change of this file (runner/runnerd.schema.test.ts holds them
 * together).
 */

/**
 * The connection protocol runnerd speaks: `session.open` sets `lastConnectionProtocolVersion`
 * to it (docs/runner.md "Protocol version"). Evidence accepts a string too (docs/evidence.md);
 * runnerd only ever writes this integer or null.
 */
export const RUNNER_PROTOCOL_VERSION = 1;

export const PROVIDER_FAILURE_CATEGORIES = ["authentication", "permission", "invalid_request"] as const;

/** A definite provider failure reported by a session command (docs/runner.md "session-open"). */
export const providerFailureSchema = z.object({
  kind: z.enum(PROVIDER_FAILURE_KINDS),
  category: z.enum(PROVIDER_FAILURE_CATEGORIES).nullable(),
  message: z.string(),
});
/** A provider failure as the engine's `startup_failure` evidence takes it (docs/evidence.md). */
export type ProviderFailure = z.infer<typeof providerFailureSchema>;

/** The runner process that wrote a state: pid, start time, and its kernel start ticks (null without a procfs). */
export const runnerProcessIdentitySchema = z.object({ pid: z.number().int(), startedAt: z.string(), startTicks: z.number().int().nullish() });

/** One command the runner processed (a turn: its exit code and bounded output tail). */
export const processedCommandSchema = z.object({
  seq: z.number().int(),
  kind: z.string(),
  processedAt: z.string(),
  exitCode: z.number().int().nullish(),
  signal: z.string().nullish(),
  durationMs: z.number().nullish(),
  outputTail: z.string().nullish(),
  /** The runner killed the agent's process group at the turn's budget; missing from older runners. */
  timedOut: z.boolean().nullish(),
  /** The budget the turn ran under (ms), or null for none. */
  timeoutMs: z.number().int().nullish(),
});
export type ProcessedCommand = z.infer<typeof processedCommandSchema>;

/** The turn being run when the state was written (it is not processed until it is in processedCommands). */
export const runnerInFlightSchema = z.object({ seq: z.number().int(), startedAt: z.string(), timeoutMs: z.number().int().nullish() });

/**
 * `runner-state.json` as runnerd writes it (docs/runner.md "The state file"; docs/rules.md §1
 * Runner state): the evidence fields plus what the controller needs more.
 */
export const runnerWireStateSchema = runnerStateSchema.extend({
  /** runnerd writes null (never connected) or RUNNER_PROTOCOL_VERSION, an integer. */
  lastConnectionProtocolVersion: z.number().int().nullable(),
  /** Whether provider session state exists beside the runner state. */
  providerStatePresent: z.boolean(),
  /** The runner process that wrote this state. */
  process: runnerProcessIdentitySchema.nullable(),
  /** The loopback port its ingress listens on (`ctl` posts there); missing from older runners. */
  ingressPort: z.number().int().nullish(),
  inFlight: runnerInFlightSchema.nullish(),
  agentCommand: z.string().nullish(),
  /** The absolute directory turns run in, as the runner itself resolved it (docs/rules.md §2.1's remote directory); missing from older runners. */
  workDir: z.string().nullish(),
  /** sha-256 (16 hex) of the runnerd program that wrote this state (docs/rules.md §2.1 staged checks); missing from older runners. */
  programDigest: z.string().nullish(),
  /** How many times a dead runner was resumed on this state (`start --resume`). */
  resumes: z.number().int().nonnegative().nullish(),
  updatedAt: z.string(),
});
export type RunnerWireState = z.infer<typeof runnerWireStateSchema>;

/** `runnerd ctl process`: the process the state names, as the sandbox sees it. */
export const runnerProcessSchema = z.object({
  state: z.enum(["running", "stopped", "absent"]),
  pid: z.number().int().optional(),
  startedAt: z.string().optional(),
  startTicks: z.number().int().optional(),
});
export type RunnerProcess = z.infer<typeof runnerProcessSchema>;

// ---- the answers (the JSON after `RUNWARDEN_RESULT `) ----------------------------------

/** Any refusal: exit code 2 (1 with code `runner_error` for a crash). */
export const runnerRefusalSchema = z.object({ ok: z.literal(false), code: z.string(), message: z.string() });
const stateAnswer = z.object({ ok: z.literal(true), state: runnerWireStateSchema });
const maybeStateAnswer = z.object({ ok: z.literal(true), state: runnerWireStateSchema.nullable() });

/** session.open answers that are not a success but carry the state (docs/runner.md "session-open"). */
export const sessionOpenFailureSchema = z.union([
  z.object({ ok: z.literal(false), code: z.literal("session_open_rejected"), message: z.string(), definite: z.literal(true), providerFailure: providerFailureSchema, state: runnerWireStateSchema }),
  z.object({
    ok: z.literal(false),
    code: z.enum(["session_open_pending", "session_open_superseded", "session_command_failed"]),
    message: z.string(),
    definite: z.literal(false),
    state: runnerWireStateSchema,
  }),
]);

/** `ctl turn`: the turn's record, or still running after `--wait-ms`. */
export const turnAnswerSchema = z.union([
  z.object({ ok: z.literal(true), state: runnerWireStateSchema, command: processedCommandSchema }),
  z.object({ ok: z.literal(true), pending: z.literal(true), state: runnerWireStateSchema, message: z.string() }),
]);

/** Every answer runnerd prints, by what was run (docs/runner.md). */
export const RUNNERD_ANSWERS = {
  start: z.union([stateAnswer, runnerRefusalSchema]),
  "start --resume": z.union([stateAnswer, runnerRefusalSchema]),
  state: maybeStateAnswer,
  process: z.object({ ok: z.literal(true), process: runnerProcessSchema }),
  stop: z.union([maybeStateAnswer, runnerRefusalSchema]),
  "session-open": z.union([stateAnswer, sessionOpenFailureSchema, runnerRefusalSchema]),
  reattach: z.union([stateAnswer, runnerRefusalSchema]),
  turn: z.union([turnAnswerSchema, runnerRefusalSchema]),
  suspend: z.union([stateAnswer, runnerRefusalSchema]),
} as const;
export type RunnerdCommand = keyof typeof RUNNERD_ANSWERS;
