/**
 * `npm run bench -- --client-js`: the JavaScript each page of the last `next build` makes a
 * browser load before it is interactive, gzipped (issue 13's goal: ≤ 200 KB on every page).
 * Per page: the framework's root chunks plus every chunk the page's client-reference manifest
 * lists for its layouts, boundaries and page. Chunks loaded later by `import()` (the wave
 * chart, the sign-out client) are not counted: the page works before them.
 */
import fs from "node:fs";
import path from "node:path";
import vm from "node:vm";
import zlib from "node:zlib";
import { z } from "zod";

const NEXT = path.resolve(".next");
const manifestSchema = z.record(z.string(), z.object({ entryJSFiles: z.record(z.string(), z.array(z.string())) }));
const buildManifestSchema = z.object({ rootMainFiles: z.array(z.string()) });

export interface PageJs {
  page: string;
  files: number;
  rawKb: number;
  gzipKb: number;
}

export function measureClientJs(): PageJs[] {
  const buildManifest = path.join(NEXT, "build-manifest.json");
  if (!fs.existsSync(buildManifest)) throw new Error(`no production build in ${NEXT}: run \`npm run build\` first`);
  const root = buildManifestSchema.parse(JSON.parse(fs.readFileSync(buildManifest, "utf8"))).rootMainFiles;
  const gz = new Map<string, { raw: number; gzip: number }>();
  const size = (file: string) => {
    let s = gz.get(file);
    if (!s) {
      const bytes = fs.readFileSync(path.join(NEXT, file));
      s = { raw: bytes.length, gzip: zlib.gzipSync(bytes).length };
      gz.set(file, s);
    }
    return s;
  };
  const pages: PageJs[] = [];
  const manifests = (fs.readdirSync(path.join(NEXT, "server/app"), { recursive: true }) as string[])
    .filter((f) => f.endsWith("page_client-reference-manifest.js"))
    .map((f) => path.join("server/app", f));
  for (const file of manifests) {
    // The manifest is a script that assigns globalThis.__RSC_MANIFEST[page].
    const sandbox = { globalThis: {} as Record<string, unknown> };
    sandbox.globalThis = sandbox as unknown as Record<string, unknown>;
    vm.runInNewContext(fs.readFileSync(path.join(NEXT, file), "utf8"), { self: sandbox, globalThis: sandbox });
    const manifest = manifestSchema.parse((sandbox as unknown as { __RSC_MANIFEST: unknown }).__RSC_MANIFEST);
    for (const [page, entry] of Object.entries(manifest)) {
      if (page.includes("_global-error") || page.includes("_not-found")) continue;
      const files = new Set([...root, ...Object.values(entry.entryJSFiles).flat()].filter((f) => f.endsWith(".js")));
      let raw = 0;
      let gzip = 0;
      for (const f of files) {
        const s = size(f);
        raw += s.raw;
        gzip += s.gzip;
      }
      pages.push({ page: page.replace(/\/page$/, "").replace("/(console)", "") || "/", files: files.size, rawKb: raw / 1024, gzipKb: gzip / 1024 });
    }
  }
  return pages.sort((a, b) => b.gzipKb - a.gzipKb);
}

export function printClientJs(say: (line: string) => void): PageJs[] {
  const pages = measureClientJs();
  say(`\nclient JS per page (the last \`next build\`; initial chunks, gzipped; goal ≤ 200 KB)`);
  for (const p of pages) say(`   ${p.page.padEnd(24)} ${p.gzipKb.toFixed(1).padStart(7)} KB gzipped (${p.rawKb.toFixed(0)} KB raw, ${p.files} files)${p.gzipKb > 200 ? "  over 200 KB" : ""}`);
  return pages;
}
