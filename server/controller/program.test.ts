import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { controllerArgs, controllerProgram } from "./program";

/** Every module of the bundle (the entry and the chunks it loads), by name. */
function modules(entry: string): Map<string, string> {
  const dir = path.dirname(entry);
  return new Map(fs.readdirSync(dir).filter((f) => f.endsWith(".mjs")).map((f) => [f, fs.readFileSync(path.join(dir, f), "utf8")]));
}

describe("controllerProgram", () => {
  it("bundles this project's sources into ES modules and leaves packages to node_modules", () => {
    const file = controllerProgram();
    expect(file.startsWith(path.resolve("node_modules/.cache/runwarden") + path.sep)).toBe(true);
    const text = [...modules(file).values()].join("\n");
    // Our code is in it (the controller's entry and the engine it decides with)…
    expect(text).toContain("function runControllerProcess(");
    expect(text).toContain("function judgeCreationIntent(");
    // …packages are imported, not copied in.
    expect(text).toMatch(/from "pino"/);
    expect(text).toMatch(/from "@prisma\/client\/runtime\/client"/);
    expect(text).not.toContain("function pino(");
    // Nothing outside the bundle's own directory is imported by path.
    expect(text).not.toMatch(/from "\.\.?\/\.\./);
  });

  it("is built once per process, into a directory named by its content", () => {
    const a = controllerProgram();
    expect(controllerProgram()).toBe(a);
    expect(path.basename(a)).toBe("controller.mjs");
    expect(path.basename(path.dirname(a))).toMatch(/^controller-[0-9a-f]{16}$/);
  });

  it("carries inline source maps of our sources, which the launch arguments tell node to use", () => {
    const [flag, file] = controllerArgs();
    expect(flag).toBe("--enable-source-maps");
    const maps = [...modules(file!).values()].map((text) => {
      const m = /\/\/# sourceMappingURL=data:application\/json;base64,([A-Za-z0-9+/=]+)\s*$/.exec(text);
      expect(m).not.toBeNull();
      return JSON.parse(Buffer.from(m![1]!, "base64").toString("utf8")) as { sources: string[]; sourcesContent?: unknown; mappings: string };
    });
    const sources = maps.flatMap((m) => m.sources);
    expect(sources.some((s) => s.endsWith("scripts/controller.ts"))).toBe(true);
    expect(sources.some((s) => s.endsWith("server/controller/sweeps/creation-intents.ts"))).toBe(true);
    expect(maps.every((m) => m.sourcesContent === undefined)).toBe(true);
    expect(maps.reduce((n, m) => n + m.mappings.length, 0)).toBeGreaterThan(1000);
  });
});
