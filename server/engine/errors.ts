import type { z } from "zod";
import { assertNever } from "./checks";

/**
 * A bundle that does not fit docs/evidence.md. The message names the first bad field by its
 * path from the bundle's root, e.g. `evidence.claim.remote.providerLeaseId: expected string`.
 */
export class EvidenceError extends Error {
  override name = "EvidenceError";
  constructor(
    /** Dotted path from the bundle, starting with `evidence`. */
    public readonly field: string,
    /** What is wrong with it, e.g. `expected string`. */
    public readonly problem: string,
  ) {
    super(`${field}: ${problem}`);
  }

  toJSON(): { name: string; field: string; problem: string; message: string } {
    return { name: this.name, field: this.field, problem: this.problem, message: this.message };
  }

  static is(err: unknown): err is EvidenceError {
    return err instanceof EvidenceError;
  }
}

type Issue = z.core.$ZodIssue;

const ROOT = "evidence";

function fieldPath(path: readonly PropertyKey[]): string {
  return [ROOT, ...path.map((p) => (typeof p === "symbol" ? (p.description ?? "symbol") : String(p)))].join(".");
}

/** Whether the bundle has a value at `path` at all (to tell "missing" from "wrong"). */
function lookup(input: unknown, path: readonly PropertyKey[]): { present: boolean; value: unknown } {
  let cur: unknown = input;
  for (const key of path) {
    if (cur === null || typeof cur !== "object" || typeof key === "symbol") return { present: false, value: undefined };
    if (!Object.hasOwn(cur, key)) return { present: false, value: undefined };
    cur = (cur as Record<string | number, unknown>)[key];
  }
  return { present: cur !== undefined, value: cur };
}

function show(value: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = typeof value;
  }
  return text.length > 40 ? `${text.slice(0, 37)}...` : text;
}

const TYPE_NAMES: Record<string, string> = { int: "integer", nonoptional: "a value" };

function typeName(expected: string): string {
  return TYPE_NAMES[expected] ?? expected;
}

function bound(origin: string, op: string, limit: number | bigint): string {
  if (origin === "string" && op === ">=" && Number(limit) === 1) return "a non-empty string";
  if (origin === "string") return `a string of length ${op} ${limit}`;
  if (origin === "array") return `a list of length ${op} ${limit}`;
  return `a number ${op} ${limit}`;
}

/** The plain problem of one zod issue, without the path. */
function problemOf(issue: Issue, input: unknown): string {
  const at = lookup(input, issue.path);
  const missing = at.present ? "" : " (missing)";
  switch (issue.code) {
    case "invalid_type":
      return `expected ${typeName(issue.expected)}${missing}`;
    case "invalid_value":
      return `expected one of ${issue.values.map(String).join(", ")}${at.present ? ` (got ${show(at.value)})` : missing}`;
    case "invalid_union": {
      if (issue.discriminator !== undefined && "options" in issue && issue.options) {
        return `expected one of ${issue.options.map(String).join(", ")}${at.present ? ` (got ${show(at.value)})` : missing}`;
      }
      const types = [...new Set(issue.errors.flat().flatMap((i) => (i.code === "invalid_type" ? [typeName(i.expected)] : [])))];
      return types.length > 0 ? `expected ${types.join(" or ")}${missing}` : "does not match any allowed shape";
    }
    case "invalid_format":
      return issue.format === "datetime" ? "expected an ISO-8601 time with a time zone" : `expected a ${issue.format}`;
    case "too_small":
      return `expected ${bound(issue.origin, issue.inclusive === false ? ">" : ">=", issue.minimum)}`;
    case "too_big":
      return `expected ${bound(issue.origin, issue.inclusive === false ? "<" : "<=", issue.maximum)}`;
    case "not_multiple_of":
      return `expected a multiple of ${issue.divisor}`;
    case "unrecognized_keys":
      return `unexpected field ${issue.keys.join(", ")}`;
    case "invalid_key":
    case "invalid_element":
    case "custom":
      return issue.message;
    default:
      return assertNever(issue);
  }
}

/** The EvidenceError for the first issue of a failed parse. */
export function evidenceErrorFromZod(error: z.ZodError, input: unknown): EvidenceError {
  const issue = error.issues[0];
  if (!issue) return new EvidenceError(ROOT, "does not fit the evidence contract");
  return new EvidenceError(fieldPath(issue.path), problemOf(issue, input));
}
