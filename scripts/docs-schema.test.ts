import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import Ajv2020 from "ajv/dist/2020";
import addFormats from "ajv-formats";
import { describe, expect, test } from "vitest";
import { safeDecide } from "../server/engine";
import { evidenceJsonSchemaText } from "../server/engine/json-schema";

/**
 * docs/evidence.schema.json: generated from the engine's zod schemas, current, and a real
 * contract an outside tool can validate bundles with: every example bundle passes it, and
 * what it rejects the engine rejects too.
 */

const ROOT = path.resolve(import.meta.dirname, "..");
const SCHEMA_FILE = path.join(ROOT, "docs/evidence.schema.json");
const FIXTURES = path.join(ROOT, "server/engine/fixtures");

const checkedIn = readFileSync(SCHEMA_FILE, "utf8");
const schema = JSON.parse(checkedIn) as Record<string, unknown>;

/** Ajv 8's draft 2020-12 build in strict mode, with the formats (date-time) the schema uses. */
function validator() {
  const ajv = new Ajv2020({ strict: true, allowUnionTypes: true, allErrors: true });
  addFormats(ajv);
  return ajv.compile(schema);
}
const validate = validator();

const fixtures = readdirSync(FIXTURES)
  .filter((f) => f.endsWith(".json"))
  .sort()
  .map((file) => ({ file, bundle: JSON.parse(readFileSync(path.join(FIXTURES, file), "utf8")) as Record<string, unknown> }));

function fixture(file: string): Record<string, unknown> {
  const found = fixtures.find((f) => f.file === file);
  if (!found) throw new Error(`no fixture ${file}`);
  return structuredClone(found.bundle);
}

describe("docs/evidence.schema.json", () => {
  test("is what the generator makes now", () => {
    const current = evidenceJsonSchemaText();
    if (checkedIn !== current) {
      expect.fail("docs/evidence.schema.json is stale: the engine's evidence schemas changed since it was generated; run npm run docs:schema and commit the file");
    }
  });

  test("is a draft 2020-12 schema with an id, a title and a description", () => {
    expect(schema).toMatchObject({ $schema: "https://json-schema.org/draft/2020-12/schema", $id: expect.any(String), title: expect.any(String), description: expect.any(String) });
  });

  test("there is an example bundle of every kind", () => {
    const kinds = new Set(fixtures.map((f) => f.bundle.kind));
    const defs = (schema.oneOf as { $ref: string }[]).map((r) => r.$ref.replace("#/$defs/", ""));
    expect([...kinds].sort()).toEqual([...defs].sort());
  });

  test.each(fixtures)("$file validates against it, and the engine decides it", ({ bundle }) => {
    const ok = validate(bundle);
    expect(validate.errors ?? []).toEqual([]);
    expect(ok).toBe(true);
    expect(safeDecide(bundle).ok).toBe(true);
  });
});

describe("what the schema rejects, the engine rejects", () => {
  const cases: { name: string; bundle: () => unknown; field: string }[] = [
    { name: "an unknown kind", bundle: () => ({ ...fixture("process-exit-same-process.json"), kind: "process_exits" }), field: "evidence.kind" },
    { name: "no kind", bundle: () => ({ ...fixture("process-exit-same-process.json"), kind: undefined }), field: "evidence.kind" },
    { name: "not an object", bundle: () => [fixture("process-exit-same-process.json")], field: "evidence" },
    {
      name: "a missing required field",
      bundle: () => {
        const b = fixture("teardown-fence-claimer-exited.json");
        delete (b.lease as Record<string, unknown>).fencedUntil;
        return b;
      },
      field: "evidence.lease.fencedUntil",
    },
    { name: "a missing observer", bundle: () => ({ ...fixture("process-exit-same-process.json"), observer: undefined }), field: "evidence.observer" },
    { name: "a bad timestamp", bundle: () => ({ ...fixture("creation-intent-creator-exited.json"), now: "yesterday" }), field: "evidence.now" },
    { name: "a time without a zone", bundle: () => ({ ...fixture("recovery-attempt-exhausted.json"), now: "2026-11-12T00:28:11" }), field: "evidence.now" },
    { name: "an impossible date", bundle: () => ({ ...fixture("teardown-fence-claimer-exited.json"), now: "2026-02-30T00:00:00Z" }), field: "evidence.now" },
    { name: "a wrong enum value", bundle: () => ({ ...fixture("lease-binding-staged-created.json"), path: "reattach" }), field: "evidence.path" },
    { name: "a negative count", bundle: () => ({ ...fixture("stopped-sandbox-auto-stopped.json"), startAttempts: -1 }), field: "evidence.startAttempts" },
    { name: "a wrong enum value inside", bundle: () => ({ ...fixture("runner-resume-after-auto-stop.json"), process: "dead" }), field: "evidence.process" },
    { name: "a session phase other than session.open", bundle: () => ({ ...fixture("startup-failure-local-transient.json"), phase: "turn.start" }), field: "evidence.phase" },
    { name: "an empty id", bundle: () => ({ ...fixture("sandbox-ownership-owned.json"), instanceId: "" }), field: "evidence.instanceId" },
    {
      name: "a runner state naming no run (two empty ids would match)",
      bundle: () => {
        const f = fixture("runner-resume-after-auto-stop.json") as { run: Record<string, unknown>; state: Record<string, unknown> };
        return { ...f, run: { ...f.run, runId: "" }, state: { ...f.state, runId: "" } };
      },
      field: "evidence.run.runId",
    },
    { name: "a non-integer attempt", bundle: () => ({ ...fixture("startup-failure-local-transient.json"), attempt: 1.5 }), field: "evidence.attempt" },
    { name: "a string for a boolean", bundle: () => ({ ...fixture("recovery-route-read-runner.json"), sandboxBound: "true" }), field: "evidence.sandboxBound" },
    {
      name: "a readable probe that does not say whether the pid is live",
      bundle: () => {
        const b = fixture("process-exit-same-process.json");
        return { ...b, probe: { ...(b.probe as object), pidLive: null } };
      },
      field: "evidence.probe.pidLive",
    },
  ];

  test.each(cases)("$name", ({ bundle, field }) => {
    const b = JSON.parse(JSON.stringify(bundle())) as unknown;
    expect(validate(b)).toBe(false);
    const r = safeDecide(b);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error.field).toBe(field);
  });

  test("an unreadable probe may leave pidLive null, in both", () => {
    const b = fixture("process-exit-same-process.json");
    const bundle = { ...b, probe: { readable: false, pidLive: null } };
    expect(validate(bundle)).toBe(true);
    expect(safeDecide(bundle).ok).toBe(true);
  });

  test("unknown extra fields and defaulted fields left out pass in both", () => {
    const bundle: Record<string, unknown> = { ...fixture("startup-failure-local-transient.json"), exportedBy: "op-7" };
    delete bundle.maxAttempts;
    expect(validate(bundle)).toBe(true);
    expect(safeDecide(bundle).ok).toBe(true);
  });
});
