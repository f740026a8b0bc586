import { z } from "zod";
import {
  bootstrapRestartEvidenceSchema,
  creationIntentEvidenceSchema,
  evidenceSchema,
  identitySchema,
  inspectionSchema,
  isoTimeSchema,
  leaseBindingEvidenceSchema,
  ownershipRecordSchema,
  partialIdentitySchema,
  probeSchema,
  processExitEvidenceSchema,
  recoveryAttemptEvidenceSchema,
  recoveryRouteEvidenceSchema,
  runnerResumeEvidenceSchema,
  runnerStateSchema,
  sandboxOwnershipEvidenceSchema,
  startupFailureEvidenceSchema,
  stoppedSandboxEvidenceSchema,
  teardownFenceEvidenceSchema,
  turnResultEvidenceSchema,
} from "./schemas";

/**
 * The evidence contract as a JSON Schema (draft 2020-12), made from the engine's own zod
 * schemas: `docs/evidence.schema.json` is this function's output (`npm run docs:schema`), and a
 * test fails when the checked-in file differs from it.
 *
 * It describes what a caller may *send* (zod's input side): a field with a default may be left
 * out, and unknown fields are allowed (the engine ignores them).
 */

/** A URN, not a web address: the schema is published in the repository, not at a URL. */
export const EVIDENCE_SCHEMA_ID = "urn:runwarden:schema:evidence";

type Meta = { id: string; title?: string; description: string };

/** Names (the `$defs` keys) and one-line descriptions of the shapes the bundle reuses. */
const SHARED: [z.ZodType, Meta][] = [
  [isoTimeSchema, { id: "time", description: "An ISO-8601 date and time with seconds and a time zone (`Z` or `+hh:mm`)." }],
  [identitySchema, { id: "identity", description: "A process's identity: boot, pid, start time (and kernel start ticks when known), pid namespace." }],
  [partialIdentitySchema, { id: "partial_identity", description: "A stored identity; any field may be missing or null (an older or cut-short record)." }],
  [probeSchema, { id: "probe", description: "A probe of a recorded pid on the observer's host. A readable probe must give pidLive as true or false." }],
  [runnerStateSchema, { id: "runner_state", description: "The runner's durable state (runner-state.json) as read from the sandbox." }],
  [inspectionSchema, { id: "inspection", description: "The provider's answer to a look-up of a sandbox by its creation name." }],
  [ownershipRecordSchema, { id: "ownership_record", description: "One of Runwarden's records that may name a sandbox: a creation intent or a lease." }],
];

const KINDS: [z.ZodType, Meta][] = [
  [leaseBindingEvidenceSchema, { id: "lease_binding", description: "May a recovered run attach to this sandbox (a staged attachment or a remote reattach)?" }],
  [bootstrapRestartEvidenceSchema, { id: "bootstrap_restart", description: "May an interrupted bootstrap start again from scratch on this sandbox?" }],
  [startupFailureEvidenceSchema, { id: "startup_failure", description: "How a failed session.open is classified: retried, or a terminal failure with its code." }],
  [processExitEvidenceSchema, { id: "process_exit", description: "Has the recorded process exited, is it alive, or can it not be told?" }],
  [creationIntentEvidenceSchema, { id: "creation_intent", description: "What the sweep does with a pending sandbox creation intent." }],
  [teardownFenceEvidenceSchema, { id: "teardown_fence", description: "May a fenced lease be released for teardown, or must it be kept?" }],
  [sandboxOwnershipEvidenceSchema, { id: "sandbox_ownership", description: "Does this instance own the sandbox by its own records?" }],
  [turnResultEvidenceSchema, { id: "turn_result", description: "Did the turn's agent command succeed, by the runner's durable record?" }],
  [recoveryAttemptEvidenceSchema, { id: "recovery_attempt", description: "After a failed recovery attempt: try again, wait for the provider, or give up." }],
  [recoveryRouteEvidenceSchema, { id: "recovery_route", description: "Which recovery path an interrupted run takes from its recorded phase." }],
  [stoppedSandboxEvidenceSchema, { id: "stopped_sandbox", description: "What to do about a lease's sandbox that the provider reports stopped or in transition." }],
  [runnerResumeEvidenceSchema, { id: "runner_resume", description: "Reattach to the runner, resume it on its own state, or refuse." }],
];

/**
 * The one refinement of the contract (a readable probe must say whether the pid is live), which
 * zod cannot translate on its own, written as the equivalent `if`/`then`.
 */
const READABLE_PROBE_NAMES_PID_LIVE = {
  if: { type: "object", properties: { readable: { const: true } }, required: ["readable"] },
  then: { type: "object", properties: { pidLive: { type: "boolean" } } },
};

/** Keyword order in the file: identity first, then the type, its constraints, then the children. */
const KEY_ORDER = [
  "$schema",
  "$id",
  "$ref",
  "title",
  "description",
  "type",
  "const",
  "enum",
  "format",
  "pattern",
  "minLength",
  "minimum",
  "exclusiveMinimum",
  "maximum",
  "default",
  "properties",
  "required",
  "items",
  "anyOf",
  "oneOf",
  "if",
  "then",
  "$defs",
];

/** Keys whose object value is a map of names, not schema keywords. */
const NAME_MAPS = new Set(["properties", "$defs"]);

function rank(key: string): number {
  const i = KEY_ORDER.indexOf(key);
  return i === -1 ? KEY_ORDER.length : i;
}

/** A copy with schema keywords in KEY_ORDER (then alphabetical), `$defs` by name, properties as declared. */
function canonical(value: unknown, parentKey?: string): unknown {
  if (Array.isArray(value)) return value.map((v) => canonical(v));
  if (value === null || typeof value !== "object") return value;
  const entries = Object.entries(value as Record<string, unknown>);
  if (parentKey === "properties") return Object.fromEntries(entries.map(([k, v]) => [k, canonical(v)]));
  const sorted =
    parentKey === "$defs"
      ? entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      : entries.sort(([a], [b]) => rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0));
  return Object.fromEntries(sorted.map(([k, v]) => [k, canonical(v, NAME_MAPS.has(k) ? k : undefined)]));
}

/** The evidence bundle's JSON Schema, as an object. */
export function evidenceJsonSchema(): Record<string, unknown> {
  const registry = z.registry<Meta>();
  for (const [schema, meta] of [...SHARED, ...KINDS]) registry.add(schema, meta);
  const generated = z.toJSONSchema(evidenceSchema, {
    target: "draft-2020-12",
    io: "input",
    // Anything zod cannot say in JSON Schema fails the generation rather than loosening the file.
    unrepresentable: "throw",
    metadata: registry,
    override: ({ zodSchema, jsonSchema }) => {
      if (zodSchema === probeSchema) Object.assign(jsonSchema, READABLE_PROBE_NAMES_PID_LIVE);
    },
  }) as Record<string, unknown>;
  const { $schema, ...rest } = generated;
  return canonical({
    $schema,
    $id: EVIDENCE_SCHEMA_ID,
    title: "Runwarden evidence bundle",
    description:
      "One evidence bundle, the input of `runwarden decide`: an object whose `kind` names the proof. Generated from server/engine/schemas.ts by `npm run docs:schema`; do not edit. See docs/evidence.md.",
    ...rest,
  }) as Record<string, unknown>;
}

/** The file's text: two-space JSON and a trailing newline. */
export function evidenceJsonSchemaText(): string {
  return `${JSON.stringify(evidenceJsonSchema(), null, 2)}\n`;
}
