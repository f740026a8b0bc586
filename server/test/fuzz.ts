import crypto from "node:crypto";
import { z } from "zod";
import { sealCursor } from "../runs/cursor";

/**
 * Test support (never imported by product code): malformed inputs for a tRPC procedure,
 * derived from its own input schema, so a new procedure or field is fuzzed without
 * anyone listing it (docs/access.md, "What the API accepts").
 */

/** One malformed request: an input to serialize with superjson, or raw text sent as is. */
export type FuzzCase = { name: string; input: unknown } | { name: string; raw: string };

/** The JSON Schema subset the generators read (zod's `toJSONSchema`, input side). */
interface Schema {
  type?: string | string[];
  properties?: Record<string, Schema>;
  items?: Schema;
  enum?: unknown[];
  const?: unknown;
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
  format?: string;
  minimum?: number;
  minItems?: number;
  default?: unknown;
  "x-date"?: boolean;
}

/** The procedure's input schema as JSON Schema (dates marked, custom types as "anything"). */
export function inputSchemaOf(zodInput: unknown): Schema | null {
  if (!zodInput) return null;
  return z.toJSONSchema(zodInput as z.ZodType, {
    io: "input",
    unrepresentable: "any",
    override: (ctx) => {
      if ((ctx.zodSchema as unknown as { _zod: { def: { type: string } } })._zod.def.type === "date") ctx.jsonSchema["x-date"] = true;
    },
  }) as Schema;
}

/** A plausible, mostly valid value for a schema: the base every mutation starts from. */
export function sample(schema: Schema | undefined, key = ""): unknown {
  if (!schema) return "fuzz";
  if (schema["x-date"]) return new Date("2026-01-01T00:00:00Z");
  if (schema.const !== undefined) return schema.const;
  if (schema.enum?.length) return schema.enum[0];
  const alt = schema.anyOf ?? schema.oneOf ?? schema.allOf;
  if (alt?.length) return sample(alt.find((s) => s.type !== "null") ?? alt[0], key);
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== "null") : schema.type;
  switch (type) {
    case "object":
      return Object.fromEntries(Object.entries(schema.properties ?? {}).map(([k, s]) => [k, sample(s, k)]));
    case "array":
      return Array.from({ length: Math.max(1, schema.minItems ?? 1) }, () => sample(schema.items, key));
    case "string":
      if (schema.format === "uuid") return crypto.randomUUID();
      if (schema.format === "email" || /email/i.test(key)) return `fuzz-${crypto.randomUUID().slice(0, 8)}@example.com`;
      return `fuzz-${key || "value"}`;
    case "integer":
    case "number":
      return Math.max(1, schema.minimum ?? 1);
    case "boolean":
      return true;
    case "null":
      return null;
    default:
      return "fuzz";
  }
}

type Path = (string | number)[];

/** Every position in a value with what sits there (the root is the empty path). */
function positions(value: unknown, path: Path = []): { path: Path; value: unknown }[] {
  const here = [{ path, value }];
  if (value instanceof Date || value === null || typeof value !== "object") return here;
  const entries: [string | number, unknown][] = Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value);
  return here.concat(entries.flatMap(([k, v]) => positions(v, [...path, k])));
}

/** A copy of `value` with the position at `path` replaced. */
function replaced(value: unknown, path: Path, by: unknown): unknown {
  if (path.length === 0) return by;
  const [head, ...rest] = path as [string | number, ...Path];
  if (Array.isArray(value)) return value.map((v, i) => (i === head ? replaced(v, rest, by) : v));
  const obj = value as Record<string, unknown>;
  return { ...obj, [head]: replaced(obj[head], rest, by) };
}

/** Nested `[[[…]]]` or `{"a":{"a":…}}` text, `depth` levels deep, inside superjson's envelope. */
export function deepJson(depth: number, kind: "array" | "object"): string {
  const open = kind === "array" ? "[" : '{"a":';
  const close = kind === "array" ? "]" : "}";
  return `{"json":${open.repeat(depth)}1${close.repeat(depth)}}`;
}

const MB = 1024 * 1024;

/** Text no field should accept or echo into a database error. */
export const BAD_STRINGS: [string, string][] = [
  ["NUL", "a\u0000b"],
  ["only NUL", "\u0000"],
  ["C0 controls", "a\u0001\u0002\u0003\u0008\u000b\u000c\u000e\u001fb"],
  ["tab and newline", "a\tb\nc\rd"],
  ["terminal escape", "\u001b[31mred\u001b[0m"],
  ["DEL and C1", "a\u007f\u0085\u009bb"],
  ["lone surrogate", "a\ud800b"],
  ["bidi override", "a\u202eb"],
  ["empty", ""],
  ["blank", "   "],
  ["SQL quote", "' OR 1=1 --"],
  ["LIKE wildcards", "%_\\"],
  ["1 MB", "x".repeat(MB)],
  ["1 MB of emoji", "\u{1f600}".repeat(MB / 4)],
];

/** Values of the wrong type for any position. */
export const WRONG_TYPES: [string, unknown][] = [
  ["null", null],
  ["number", 12345],
  ["negative", -1],
  ["fraction", 1.5],
  ["huge number", 2 ** 64],
  ["NaN", Number.NaN],
  ["Infinity", Number.POSITIVE_INFINITY],
  ["bigint", 2n ** 70n],
  ["boolean", true],
  ["empty array", []],
  ["array of strings", ["a", "b"]],
  ["empty object", {}],
  ["operator object", { $ne: null, gt: "" }],
  ["year-0 date", new Date("0000-01-01T00:00:00Z")],
  ["far-future date", new Date(8.64e15)],
  ["invalid date", new Date(Number.NaN)],
  ["string", "fuzz"],
];

/** The wrong types and bad strings tried at each position of a large given base. */
const SHORT = new Set(["null", "number", "NUL", "lone surrogate"]);

/** A valid restart-chaos wave report (one task), for fuzzing waves.import field by field. */
export function sampleWaveReport(id = "w-20261201T000000-s7"): Record<string, unknown> {
  const check = { ok: true, detail: "fine" };
  return {
    id,
    seed: 7,
    instanceId: "wave-fuzz",
    companyId: "co-wave",
    startedAt: "2026-11-12T01:08:00.000Z",
    finishedAt: "2026-11-12T01:09:00.000Z",
    plan: { seed: 7, tasks: [], kills: [], concurrency: 1 },
    passed: true,
    orphanSandboxes: [],
    reclaims: [],
    decoys: [{ id: "d1", kind: "foreign", intact: true }],
    events: [],
    tasks: [
      {
        id: "t01",
        taskId: `${id}-t01`,
        passed: true,
        restartCrossing: true,
        runs: [{ id: "r0", status: "succeeded", failureCode: null, previousRunId: null, restarts: 1, createdAt: "2026-11-12T01:08:01.000Z", startedAt: null, finishedAt: "2026-11-12T01:08:05.000Z" }],
        failureCodes: [],
        retriesNeeded: 0,
        checks: { R1: check, R2: check, R3: check, R4: check, R5: check, R6: check },
      },
    ],
    kills: [],
    faults: [],
  };
}

/** Cursors a client could send: unsigned, tampered, or signed around payloads no list hands out. */
export function forgedCursors(): [string, string][] {
  const signed = (payload: unknown) => sealCursor(typeof payload === "string" ? payload : JSON.stringify(payload));
  const real = signed({ t: new Date().toISOString(), id: crypto.randomUUID() });
  const [body = "", mac = ""] = real.split(".");
  const flipped = `${body}.${mac.slice(0, -1)}${mac.endsWith("A") ? "B" : "A"}`;
  return [
    ["unsigned base64", Buffer.from(JSON.stringify({ t: new Date().toISOString(), id: "x" })).toString("base64url")],
    ["tampered mac", flipped],
    ["payload swapped", `${Buffer.from(JSON.stringify({ t: new Date().toISOString(), id: "not-a-uuid" })).toString("base64url")}.${mac}`],
    ["just a dot", "."],
    ["number text", "-1"],
    ["signed non-UUID id", signed({ t: new Date().toISOString(), id: "not-a-uuid" })],
    ["signed year-0 date", signed({ t: "0000-01-01T00:00:00.000Z", id: crypto.randomUUID() })],
    ["signed far-future date", signed({ t: "275760-09-13T00:00:00.000Z", id: crypto.randomUUID() })],
    ["signed id past bigint", signed("99999999999999999999")],
    ["signed bigint max + 1", signed("9223372036854775808")],
    ["signed negative id", signed("-5")],
    ["signed NUL", signed({ t: new Date().toISOString(), id: "a\u0000b" })],
    ["signed garbage", signed("{not json")],
  ];
}

/**
 * Every malformed input for a procedure with this input schema (null: it takes none):
 * whole-input replacements, deep nesting and unparsable bodies, then at each position of
 * a plausible input the wrong types, at each string the bad strings, extra keys on each
 * object, and forged cursors wherever a field is called `cursor`.
 */
export function malformedInputs(schema: Schema | null, options: { base?: unknown } = {}): FuzzCase[] {
  // A given base (a whole wave report, an evidence bundle) has many positions: each gets the short lists.
  const base = options.base ?? (schema ? sample(schema) : undefined);
  const wrongTypes = options.base === undefined ? WRONG_TYPES : WRONG_TYPES.filter(([name]) => SHORT.has(name));
  const badStrings = options.base === undefined ? BAD_STRINGS : BAD_STRINGS.filter(([name]) => SHORT.has(name));
  const cases: FuzzCase[] = [
    { name: "no input", input: undefined },
    { name: "raw: not JSON", raw: "{not json" },
    { name: "raw: JSON without superjson's envelope", raw: JSON.stringify(base ?? {}) },
    { name: "raw: superjson meta naming a missing path", raw: JSON.stringify({ json: base ?? {}, meta: { values: { "a.b.c": ["Date"] } } }) },
    { name: "raw: superjson meta with an unknown type", raw: JSON.stringify({ json: "x", meta: { values: ["custom", "Nope"] } }) },
    { name: "raw: __proto__ key", raw: `{"json":{"__proto__":{"polluted":true},"constructor":{"prototype":{"x":1}}}}` },
    { name: "raw: nested 501 arrays", raw: deepJson(501, "array") },
    { name: "raw: nested 501 objects", raw: deepJson(501, "object") },
    { name: "raw: nested 100000 arrays", raw: deepJson(100_000, "array") },
    { name: "nested 200 objects (under the limit)", input: Array.from({ length: 200 }).reduce<unknown>((inner) => ({ a: inner }), base ?? 1) },
    ...WRONG_TYPES.map(([name, input]) => ({ name: `whole input: ${name}`, input })),
    ...BAD_STRINGS.map(([name, input]) => ({ name: `whole input: string ${name}`, input })),
  ];
  for (const { path, value } of positions(base)) {
    const at = path.length ? path.join(".") : "input";
    if (path.length > 0) for (const [name, v] of wrongTypes) cases.push({ name: `${at}: ${name}`, input: replaced(base, path, v) });
    if (typeof value === "string") for (const [name, v] of badStrings) cases.push({ name: `${at}: ${name}`, input: replaced(base, path, v) });
    if (value && typeof value === "object" && !Array.isArray(value) && !(value instanceof Date)) {
      cases.push({ name: `${at}: extra keys`, input: replaced(base, path, { ...value, extra: "x", toString: 1, valueOf: "x" }) });
      cases.push({ name: `${at}: array for an object`, input: replaced(base, path, [value]) });
    }
    if (Array.isArray(value)) cases.push({ name: `${at}: 10000 items`, input: replaced(base, path, Array.from({ length: 10_000 }, (_, i) => `item-${i}`)) });
  }
  const props = schema?.properties ?? {};
  if ("cursor" in props) for (const [name, cursor] of forgedCursors()) cases.push({ name: `cursor: ${name}`, input: { ...(base as object), cursor } });
  return cases;
}
