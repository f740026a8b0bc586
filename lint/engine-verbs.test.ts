import fs from "node:fs";
import path from "node:path";
import { describe, expect, test } from "vitest";

/**
 * The engine's verbs (ARCHITECTURE.md, "The engine's verbs"): one verb per kind of function.
 * Read from the source, so a new `evaluateX` or `decideY` fails here, and every proof kind's
 * function — what `judgeEvidence` dispatches to — is a `judge…`.
 */

const ENGINE = path.join(import.meta.dirname, "..", "server", "engine");
const sources = fs
  .readdirSync(ENGINE)
  .filter((f) => f.endsWith(".ts") && !f.endsWith(".test.ts"))
  .map((f) => ({ file: f, text: fs.readFileSync(path.join(ENGINE, f), "utf8") }));
const exported = sources.flatMap(({ file, text }) => [...text.matchAll(/^export function (\w+)/gm)].map((m) => ({ file, name: m[1]! })));

const RETIRED = /^(evaluate|decide|route|may|assess|determine)[A-Z]/;

describe("the engine's verbs", () => {
  test("the source was read (the test would pass on nothing otherwise)", () => {
    expect(exported.length).toBeGreaterThan(40);
  });

  test("no exported engine function uses a verb that is not the engine's", () => {
    expect(exported.filter((f) => RETIRED.test(f.name)).map((f) => `${f.file}: ${f.name}`)).toEqual([]);
  });

  test("every proof kind's function, as judgeEvidence dispatches to it, is a judge…", () => {
    const decide = sources.find((s) => s.file === "decide.ts")!.text;
    const body = decide.slice(decide.indexOf("export function judgeEvidence"), decide.indexOf("export function safeDecide"));
    const called = [...body.matchAll(/return (\w+)\(evidence/g)].map((m) => m[1]!).filter((n) => n !== "assertNever");
    expect(called.length).toBeGreaterThanOrEqual(12);
    expect(called.filter((n) => !n.startsWith("judge"))).toEqual([]);
  });
});
