/**
 * `npm run bench -- --client-js`: the JavaScript each page of the last `next build` makes a
 * browser load before it is interactive, gzipped (the budget: ≤ 200 KB on every page, docs/decisions/0003-cost-at-scale.md).
 * Per page: the framework's root chunks plus every chunk the page's client-reference manifest
 * lists for its layouts, boundaries and page. Chunks loaded later by `import()` (the wave
 * chart, the sign-out client, sonner, the Retry confirmation) are not counted: the page is
 * interactive before them. (`next/dynamic` with `ssr: false` preloads nothing into the HTML;
 * with SSR on it would, and such a chunk would belong in this figure.)
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
  /** The page's chunks, relative to .next. */
  chunks: string[];
}

/** The pass/fail line (docs/decisions/0003-cost-at-scale.md): every page's initial JS, gzipped, at most this. */
export const CLIENT_JS_LIMIT_KB = 200;

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
      pages.push({ page: page.replace(/\/page$/, "").replace("/(console)", "") || "/", files: files.size, rawKb: raw / 1024, gzipKb: gzip / 1024, chunks: [...files] });
    }
  }
  return pages.sort((a, b) => b.gzipKb - a.gzipKb);
}

export function printClientJs(say: (line: string) => void, verbose = false): PageJs[] {
  const pages = measureClientJs();
  say(`\nclient JS per page (the last \`next build\`; initial chunks, gzipped; goal ≤ ${CLIENT_JS_LIMIT_KB} KB)`);
  for (const p of pages) say(`   ${p.gzipKb > CLIENT_JS_LIMIT_KB ? "FAIL" : "pass"} ${p.page.padEnd(24)} ${p.gzipKb.toFixed(1).padStart(7)} KB gzipped (${p.rawKb.toFixed(0)} KB raw, ${p.files} files)`);
  const over = pages.filter((p) => p.gzipKb > CLIENT_JS_LIMIT_KB).length;
  say(over === 0 ? `   every page ≤ ${CLIENT_JS_LIMIT_KB} KB` : `   ${over} of ${pages.length} pages over ${CLIENT_JS_LIMIT_KB} KB`);
  if (verbose) printBreakdown(pages, say);
  return pages;
}

/**
 * `--verbose`: what each chunk holds, by package, from the build's browser source maps (a build
 * with `productionBrowserSourceMaps`; without maps a chunk is listed whole). A package's share
 * of a chunk's gzipped size is its share of the chunk's raw bytes: an estimate.
 */
function printBreakdown(pages: PageJs[], say: (line: string) => void) {
  const byChunk = new Map<string, { gzip: number; packages: Map<string, number> | undefined }>();
  for (const p of pages)
    for (const c of p.chunks)
      if (!byChunk.has(c)) {
        const bytes = fs.readFileSync(path.join(NEXT, c));
        const gzip = zlib.gzipSync(bytes).length / 1024;
        const code = bytes.toString("utf8");
        // The map is named by the chunk's last line (`//# sourceMappingURL=…`), not after the chunk.
        const url = /\/\/# sourceMappingURL=(\S+)\s*$/.exec(code)?.[1];
        const map = url && !url.startsWith("data:") ? path.join(NEXT, path.dirname(c), url) : undefined;
        const shares = map && fs.existsSync(map) ? packageShares(code, JSON.parse(fs.readFileSync(map, "utf8")) as SourceMap) : undefined;
        byChunk.set(c, { gzip, packages: shares && new Map([...shares].map(([pkg, share]) => [pkg, share * gzip])) });
      }
  const users = (c: string) => pages.filter((p) => p.chunks.includes(c)).map((p) => p.page);
  say(`\nchunks by gzipped size (KB), with the packages in each and the pages that load it`);
  for (const [c, { gzip, packages }] of [...byChunk].sort((a, b) => b[1].gzip - a[1].gzip)) {
    const on = users(c);
    say(`   ${gzip.toFixed(1).padStart(6)}  ${c}  (${on.length === pages.length ? "every page" : on.join(", ")})`);
    if (!packages) continue;
    for (const [pkg, kb] of [...packages].sort((a, b) => b[1] - a[1]).filter(([, kb]) => kb >= 0.5)) say(`          ${kb.toFixed(1).padStart(6)}  ${pkg}`);
  }
  say(`\npackages per page (KB gzipped, estimated)`);
  for (const p of pages) {
    const sum = new Map<string, number>();
    for (const c of p.chunks) for (const [pkg, kb] of byChunk.get(c)?.packages ?? []) sum.set(pkg, (sum.get(pkg) ?? 0) + kb);
    const top = [...sum].sort((a, b) => b[1] - a[1]).filter(([, kb]) => kb >= 1);
    say(`   ${p.page.padEnd(24)} ${top.map(([pkg, kb]) => `${pkg} ${kb.toFixed(1)}`).join(", ")}`);
  }
}

interface SourceMap {
  sources: string[];
  mappings?: string;
  sections?: { offset: { line: number; column: number }; map: SourceMap }[];
}

/** Each package's share of a chunk's bytes: every mapped segment counts up to the next one. */
function packageShares(code: string, map: SourceMap): Map<string, number> {
  const lines = code.split("\n");
  const bytes = new Map<string, number>();
  const add = (source: string | undefined, n: number) => {
    const pkg = packageOf(source);
    bytes.set(pkg, (bytes.get(pkg) ?? 0) + n);
  };
  const walk = (m: SourceMap, lineOffset: number, columnOffset: number, endLine: number, endColumn: number) => {
    if (m.sections) {
      m.sections.forEach((s, i) => {
        const next = m.sections?.[i + 1];
        walk(s.map, lineOffset + s.offset.line, s.offset.line === 0 ? columnOffset + s.offset.column : s.offset.column, next ? lineOffset + next.offset.line : endLine, next ? next.offset.column : endColumn);
      });
      return;
    }
    let source = 0;
    (m.mappings ?? "").split(";").forEach((segments, i) => {
      const line = lineOffset + i;
      if (line > endLine) return;
      const text = lines[line] ?? "";
      const stop = line === endLine ? Math.min(endColumn, text.length) : text.length;
      let column = 0;
      let start = -1;
      let current: string | undefined;
      for (const segment of segments ? segments.split(",") : []) {
        const v = vlq(segment);
        column += v[0] ?? 0;
        if (v.length > 1) source += v[1] ?? 0;
        const at = (i === 0 ? columnOffset : 0) + column;
        if (start >= 0) add(current, Math.max(0, Math.min(at, stop) - start));
        start = at;
        current = v.length > 1 ? m.sources[source] : undefined;
      }
      if (start >= 0) add(current, Math.max(0, stop - start));
    });
  };
  walk(map, 0, 0, lines.length - 1, Number.MAX_SAFE_INTEGER);
  const total = [...bytes.values()].reduce((a, b) => a + b, 0) || 1;
  return new Map([...bytes].map(([pkg, n]) => [pkg, n / total]));
}

function packageOf(source: string | undefined): string {
  if (source === undefined) return "(unmapped: runtime glue)";
  const at = source.lastIndexOf("node_modules/");
  if (at < 0) return "(our code)";
  const parts = source.slice(at + "node_modules/".length).split("/");
  return parts[0]?.startsWith("@") ? `${parts[0]}/${parts[1] ?? ""}` : (parts[0] ?? source);
}

const VLQ = new Map([..."ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"].map((c, i) => [c, i]));
/** One source-map segment: base64 VLQ numbers. */
function vlq(segment: string): number[] {
  const out: number[] = [];
  let value = 0;
  let shift = 0;
  for (const c of segment) {
    const digit = VLQ.get(c) ?? 0;
    value += (digit & 31) << shift;
    if (digit & 32) shift += 5;
    else {
      out.push(value & 1 ? -(value >>> 1) : value >>> 1);
      value = 0;
      shift = 0;
    }
  }
  return out;
}
