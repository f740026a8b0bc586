import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { controllerArgs, controllerProgram } from "./program";

describe("controllerProgram", () => {
  it("bundles this project's sources into one ES module and leaves packages to node_modules", () => {
    const file = controllerProgram();
    expect(file.startsWith(path.resolve("node_modules/.cache/runwarden") + path.sep)).toBe(true);
    const text = fs.readFileSync(file, "utf8");
    // Our code is in it (the controller's entry and the engine it decides with)…
    expect(text).toContain("function runControllerProcess(");
    expect(text).toContain("function decideCreationIntent(");
    // …packages are imported, not copied in.
    expect(text).toMatch(/from "pino"/);
    expect(text).toMatch(/from "@prisma\/client\/runtime\/client"/);
    expect(text).not.toContain("function pino(");
  });

  it("is built once per process and named by its content", () => {
    const a = controllerProgram();
    expect(controllerProgram()).toBe(a);
    expect(path.basename(a)).toMatch(/^controller-[0-9a-f]{16}\.mjs$/);
  });

  it("carries an inline source map of our sources, which the launch arguments tell node to use", () => {
    const [flag, file] = controllerArgs();
    expect(flag).toBe("--enable-source-maps");
    const text = fs.readFileSync(file!, "utf8");
    const m = /\/\/# sourceMappingURL=data:application\/json;base64,([A-Za-z0-9+/=]+)\s*$/.exec(text);
    expect(m).not.toBeNull();
    const map = JSON.parse(Buffer.from(m![1]!, "base64").toString("utf8")) as { sources: string[]; sourcesContent?: unknown; mappings: string };
    expect(map.sources.some((s) => s.endsWith("scripts/controller.ts"))).toBe(true);
    expect(map.sources.some((s) => s.endsWith("server/controller/sweeps.ts"))).toBe(true);
    expect(map.sourcesContent).toBeUndefined();
    expect(map.mappings.length).toBeGreaterThan(1000);
  });
});
