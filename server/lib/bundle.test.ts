import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { bundledProgram } from "./bundle";

/** Every module of the bundle (the entry and the chunks it loads), by name. */
function modules(entry: string): Map<string, string> {
  const dir = path.dirname(entry);
  return new Map(fs.readdirSync(dir).filter((f) => f.endsWith(".mjs")).map((f) => [f, fs.readFileSync(path.join(dir, f), "utf8")]));
}

describe("bundledProgram split at dynamic imports", () => {
  it("the CLI's entry does not load the database or better-auth: `decide` never needs them", () => {
    const entry = bundledProgram("server/cli/runwarden.ts", "runwarden");
    const all = modules(entry);
    // What a start loads: the entry and, transitively, the modules it imports statically.
    const loaded = new Set<string>();
    const packages = new Set<string>();
    const visit = (name: string) => {
      if (loaded.has(name)) return;
      loaded.add(name);
      for (const [, from] of (all.get(name) ?? "").matchAll(/^import (?:[^;]*? from )?"([^"]+)";$/gms)) {
        if (from!.startsWith("./")) visit(from!.slice(2));
        else packages.add(from!);
      }
    };
    visit(path.basename(entry));
    expect(loaded.size).toBeGreaterThan(1);
    expect(packages).toContain("commander");
    expect([...packages].filter((s) => /better-auth|@prisma|^pg$/.test(s))).toEqual([]);
    // …and the lazily loaded chunks are there, with those packages.
    expect([...modules(entry).values()].some((t) => t.includes('from "better-auth"'))).toBe(true);
  });
});
