import type { Check } from "./verdicts";

type Scalar = string | number | boolean | null;

export function check(name: string, ok: boolean, expected?: Scalar, actual?: Scalar): Check {
  const c: Check = { name, ok };
  if (expected !== undefined) c.expected = expected;
  if (actual !== undefined) c.actual = actual;
  return c;
}

/** Milliseconds of an ISO time the schemas already validated (never the clock). */
export function at(iso: string): number {
  return Date.parse(iso);
}

/** Compile-time proof that a switch covered every case. */
export function assertNever(value: never): never {
  throw new Error(`unhandled case: ${JSON.stringify(value)}`);
}
