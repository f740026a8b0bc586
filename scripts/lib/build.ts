import fs from "node:fs";
import path from "node:path";

/** Sources whose change makes a production build stale. */
const INPUTS = ["app", "components", "trpc", "server", "public", "types", "next.config.ts", "postcss.config.mjs", "package-lock.json", "tsconfig.json"];
const IGNORED = new Set(["node_modules", ".next", ".data", "generated"]);
/** Tests and their support are never in the build: editing them leaves it current. */
const NOT_BUILT = /\.test\.tsx?$|^server\/test\//;

export function buildIsCurrent(root = process.cwd()): { current: boolean; reason: string } {
  const buildId = path.join(root, ".next", "BUILD_ID");
  if (!fs.existsSync(buildId)) return { current: false, reason: "no production build yet" };
  const builtAt = fs.statSync(buildId).mtimeMs;
  const newer = newestInput(root, builtAt);
  return newer ? { current: false, reason: `${newer} changed since the last build` } : { current: true, reason: "build is current" };
}

function newestInput(root: string, since: number): string | null {
  const stack = INPUTS.map((p) => path.join(root, p)).filter((p) => fs.existsSync(p));
  while (stack.length) {
    const p = stack.pop()!;
    const st = fs.statSync(p);
    if (st.isDirectory()) {
      for (const entry of fs.readdirSync(p)) if (!IGNORED.has(entry)) stack.push(path.join(p, entry));
    } else if (st.mtimeMs > since && !NOT_BUILT.test(path.relative(root, p).split(path.sep).join("/"))) {
      return path.relative(root, p);
    }
  }
  return null;
}
