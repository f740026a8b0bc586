import fs from "node:fs";
import path from "node:path";

/**
 * The build this process runs, as a controller records it on its row (docs/operations.md,
 * "Upgrades and migrations"): the package's version and, in a git checkout, its commit —
 * `0.1.0+110f8be` — read from the working directory the process was started in. Outside a
 * checkout the version alone; nothing found: `unknown`. Read once per directory.
 */
const cached = new Map<string, string>();

export function buildVersion(dir = process.cwd()): string {
  let found = cached.get(dir);
  if (found === undefined) {
    found = readVersion(dir);
    cached.set(dir, found);
  }
  return found;
}

function readVersion(dir: string): string {
  let version = "unknown";
  try {
    version = (JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8")) as { version?: string }).version ?? "unknown";
  } catch {
    return version;
  }
  const commit = gitCommit(dir);
  return commit ? `${version}+${commit.slice(0, 7)}` : version;
}

/** HEAD's commit from `.git` itself (no git binary needed): a detached HEAD, a loose ref or packed-refs. */
function gitCommit(dir: string): string | null {
  try {
    const gitDir = path.join(dir, ".git");
    const head = fs.readFileSync(path.join(gitDir, "HEAD"), "utf8").trim();
    if (/^[0-9a-f]{40}$/.test(head)) return head;
    const ref = /^ref: (.+)$/.exec(head)?.[1];
    if (!ref) return null;
    const loose = path.join(gitDir, ref);
    if (fs.existsSync(loose)) return fs.readFileSync(loose, "utf8").trim();
    const packed = fs.readFileSync(path.join(gitDir, "packed-refs"), "utf8");
    return packed.split("\n").find((l) => l.endsWith(` ${ref}`))?.split(" ")[0] ?? null;
  } catch {
    return null;
  }
}
