import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { buildSync } from "esbuild";

const ENTRY = "scripts/controller.ts";
// Under node_modules, so the bundle's package imports resolve to the project's packages.
const CACHE_DIR = "node_modules/.cache/runwarden";

let built: string | null = null;

/**
 * The controller program as one ES module: this project's sources bundled, packages left to
 * node_modules. A controller then starts without a TypeScript loader, about half a second
 * sooner, and a restarted controller reclaims what its predecessor left that much sooner
 * (issue 12's bench). Built once per launching process from the sources on disk and kept by
 * content, so concurrent launchers share one file.
 */
export function controllerProgram(): string {
  if (built && fs.existsSync(built)) return built;
  let text: string;
  try {
    const result = buildSync({
      entryPoints: [path.resolve(ENTRY)],
      bundle: true,
      platform: "node",
      format: "esm",
      target: "node20",
      packages: "external",
      write: false,
      outfile: "controller.mjs",
      // Stack traces name our .ts files and lines (under --enable-source-maps, controllerArgs);
      // the sources themselves stay out, they are in the checkout.
      sourcemap: "inline",
      sourcesContent: false,
      sourceRoot: process.cwd(),
      logLevel: "silent",
    });
    text = result.outputFiles[0]!.text;
  } catch (err) {
    throw new Error(`the controller program could not be built from ${ENTRY}: ${err instanceof Error ? err.message : String(err)}`);
  }
  const dir = path.resolve(CACHE_DIR);
  const file = path.join(dir, `controller-${crypto.createHash("sha256").update(text).digest("hex").slice(0, 16)}.mjs`);
  if (!fs.existsSync(file)) {
    fs.mkdirSync(dir, { recursive: true });
    const tmp = `${file}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, text);
    fs.renameSync(tmp, file);
  }
  built = file;
  return file;
}

/** How to run the controller program: node's own source-map support reads the bundle's inline map. */
export function controllerArgs(): string[] {
  return ["--enable-source-maps", controllerProgram()];
}
