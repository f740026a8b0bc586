import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

/**
 * The build before this one, as a deploy meets it (docs/operations.md, "Upgrades and
 * migrations"): the commit before the one that added this checkout's newest migration — the
 * newest build whose controllers run while that migration is applied under them — exported from
 * this clone's history (`git archive`, no network) with this checkout's node_modules beside it
 * and its own Prisma client generated from its own schema.
 * Its controller runs from its own source (`node --import tsx scripts/controller.ts` in its
 * directory: its own code, its own runner programs, its own migrations list).
 */
export interface OlderBuild {
  root: string;
  /** The commit it was exported from. */
  commit: string;
  /** The newest migration it knows (the expanded schema has at least one more). */
  newestMigration: string;
  /** What node runs in `root` to start its controller (`launchController`'s `nodeArgs`). */
  nodeArgs: string[];
}

const PARTS = ["package.json", "tsconfig.json", "prisma.config.ts", "scripts", "server", "runner", "prisma"];

function git(repo: string, args: string[]): string {
  try {
    return execFileSync("git", ["-C", repo, ...args], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }).trim();
  } catch (err) {
    const stderr = (err as { stderr?: string }).stderr ?? "";
    throw new Error(`git ${args.join(" ")} in ${repo} failed — the older build is made from this clone's history, which a shallow clone lacks (git fetch --unshallow): ${stderr.trim()}`);
  }
}

export function checkoutOlderBuild(root: string): OlderBuild {
  const repo = path.resolve(import.meta.dirname, "..", "..");
  const added = git(repo, ["log", "-1", "--format=%H", "--diff-filter=A", "--", "prisma/migrations"]);
  if (!added) throw new Error(`no commit in ${repo} added a migration: nothing to make the older build from`);
  const commit = git(repo, ["rev-parse", `${added}^`]);
  fs.mkdirSync(root, { recursive: true });
  const tar = path.join(root, "..", `${path.basename(root)}.tar`);
  git(repo, ["archive", "--format=tar", `--output=${tar}`, commit, ...PARTS]);
  execFileSync("tar", ["-xf", tar, "-C", root]);
  fs.rmSync(tar);
  fs.symlinkSync(path.join(repo, "node_modules"), path.join(root, "node_modules"), "dir");
  // Its own Prisma client, from its own schema (generated, never committed: npm ci's postinstall).
  execFileSync(process.execPath, [path.join(root, "scripts", "prisma-generate.mjs")], { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
  const migrations = fs.readdirSync(path.join(root, "prisma", "migrations"), { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name).sort();
  return { root, commit, newestMigration: migrations.at(-1) ?? "", nodeArgs: ["--import", "tsx", "scripts/controller.ts"] };
}
