import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { buildSync } from "esbuild";

// Under node_modules, so a bundle's package imports resolve to the project's packages.
const CACHE_DIR = "node_modules/.cache/runwarden";

const built = new Map<string, string>();

/**
 * One of this project's programs as ES modules: its sources bundled, packages left to
 * node_modules. It then starts without a TypeScript loader (tsx compiles and loads every
 * import on each start). Split at each dynamic `import()`, so what a command loads lazily (the
 * CLI's database, better-auth) stays out of a start that does not need it. Built once per
 * process from the sources on disk into a directory named by its content, so concurrent
 * launchers share one copy; returns the entry file.
 */
export function bundledProgram(entry: string, name: string): string {
  const known = built.get(entry);
  if (known && fs.existsSync(known)) return known;
  const staging = path.resolve(CACHE_DIR, `${name}.staging`);
  let files: { rel: string; text: string }[];
  try {
    const result = buildSync({
      entryPoints: { [name]: path.resolve(entry) },
      bundle: true,
      splitting: true,
      platform: "node",
      format: "esm",
      target: "node20",
      packages: "external",
      write: false,
      outdir: staging,
      outExtension: { ".js": ".mjs" },
      // Stack traces name our .ts files and lines (under --enable-source-maps, see programArgs);
      // the sources themselves stay out, they are in the checkout.
      sourcemap: "inline",
      sourcesContent: false,
      sourceRoot: process.cwd(),
      logLevel: "silent",
    });
    files = result.outputFiles.map((f) => ({ rel: path.relative(staging, f.path), text: f.text })).sort((a, b) => a.rel.localeCompare(b.rel));
  } catch (err) {
    throw new Error(`the ${name} program could not be built from ${entry}: ${err instanceof Error ? err.message : String(err)}`);
  }
  const hash = crypto.createHash("sha256");
  for (const f of files) hash.update(f.rel).update("\0").update(f.text).update("\0");
  const dir = path.resolve(CACHE_DIR, `${name}-${hash.digest("hex").slice(0, 16)}`);
  if (!fs.existsSync(dir)) {
    const tmp = `${dir}.${process.pid}.tmp`;
    fs.rmSync(tmp, { recursive: true, force: true });
    fs.mkdirSync(tmp, { recursive: true });
    for (const f of files) fs.writeFileSync(path.join(tmp, f.rel), f.text);
    try {
      fs.renameSync(tmp, dir);
    } catch (err) {
      // Another process renamed the same content into place first.
      fs.rmSync(tmp, { recursive: true, force: true });
      if (!fs.existsSync(dir)) throw err;
    }
  }
  const file = path.join(dir, `${name}.mjs`);
  built.set(entry, file);
  return file;
}

/** How node runs a bundled program: its own source-map support reads the bundle's inline map. */
export function programArgs(file: string): string[] {
  return ["--enable-source-maps", file];
}
