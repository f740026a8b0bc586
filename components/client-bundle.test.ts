import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { build, type Metafile } from "esbuild";
import { describe, expect, it } from "vitest";

// docs/decisions/0003-cost-at-scale.md: ≤ 200 KB of JavaScript before a page is interactive. What a client module imports
// statically is in that figure; what it loads with import() is not. These packages must only
// ever be reached through import(): sonner (toasts, components/toast.tsx) and zod (the report
// schemas; the browser validates nothing with it). The root providers, on every page, import
// no radix-ui (its tooltip and popper were ~23 KB gzipped of every page).
const NEVER_STATIC = ["sonner", "zod"];
const root = path.resolve(import.meta.dirname, "..");

function clientModules(): string[] {
  const out: string[] = [];
  for (const dir of ["app", "components"])
    for (const file of fs.readdirSync(path.join(root, dir), { recursive: true }) as string[])
      if (/\.tsx?$/.test(file) && !/\.test\.tsx?$/.test(file) && /^\s*["']use client["']/.test(fs.readFileSync(path.join(root, dir, file), "utf8"))) out.push(path.join(dir, file));
  return out.sort();
}

/** Per entry, the packages its static import graph reaches (import() edges are not followed). */
async function staticPackages(entries: string[]): Promise<Map<string, Set<string>>> {
  const result = await build({
    absWorkingDir: root,
    entryPoints: entries,
    bundle: true,
    splitting: true,
    format: "esm",
    platform: "browser",
    packages: "external",
    jsx: "automatic",
    loader: { ".css": "empty", ".svg": "empty" },
    outdir: path.join(os.tmpdir(), "runwarden-client-bundle-test"),
    write: false,
    metafile: true,
    logLevel: "silent",
  });
  const outputs: Metafile["outputs"] = result.metafile.outputs;
  const byEntry = new Map<string, Set<string>>();
  for (const [file, output] of Object.entries(outputs)) {
    if (!output.entryPoint) continue;
    const packages = new Set<string>();
    const seen = new Set<string>();
    const walk = (name: string) => {
      if (seen.has(name)) return;
      seen.add(name);
      for (const imp of outputs[name]?.imports ?? []) {
        if (imp.kind !== "import-statement") continue;
        if (imp.external) packages.add(imp.path);
        else walk(imp.path);
      }
    };
    walk(file);
    byEntry.set(output.entryPoint, packages);
  }
  return byEntry;
}

const isOf = (pkg: string, name: string) => pkg === name || pkg.startsWith(`${name}/`);

describe("the client's static imports (what every page loads before it is interactive)", () => {
  it("reach sonner and zod only through import(), and the root providers no radix-ui", async () => {
    const entries = clientModules();
    expect(entries).toContain(path.join("components", "providers.tsx"));
    const byEntry = await staticPackages(entries);
    const offenders: string[] = [];
    for (const [entry, packages] of byEntry)
      for (const pkg of packages) if (NEVER_STATIC.some((name) => isOf(pkg, name))) offenders.push(`${entry} → ${pkg}`);
    expect(offenders).toEqual([]);
    expect([...(byEntry.get("components/providers.tsx") ?? ["missing"])].filter((p) => isOf(p, "radix-ui") || p === "missing")).toEqual([]);
  });
});
