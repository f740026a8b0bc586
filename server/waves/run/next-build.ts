import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { parseRunnerReleases, protocolOf, RELEASES_FILE } from "../../providers/runner-releases";

/**
 * The next build, made without network (docs/rules.md §5, KD; docs/runner.md, "Versions"): a
 * directory a controller is started in (`launchController`'s `cwd`). It reads its runner
 * programs from `<root>/runner` (server/providers/runner.ts: `loadProgram` falls back to the
 * working directory, the bundle having none beside it) and applies `<root>/prisma/migrations`
 * (server/db/migrate.ts resolves `prisma/migrations` against the working directory).
 *
 * Its runnerd.mjs is this one with one line more, so its digest differs; its releases.json
 * lists it beside this build's releases (or alone: a build that dropped them). With
 * `migrations`, it carries this checkout's migrations and one expand migration more, named
 * after the last: the database then holds a migration older builds do not know, which
 * `migrate` ignores (it applies only its own list).
 */

/** The next build's own migration: an expand step, as a deploy would bring (docs/operations.md, "Upgrades and migrations"). */
export const NEXT_BUILD_MIGRATION = "29990101000000_next_build_expand";
const NEXT_BUILD_MIGRATION_SQL = `SET lock_timeout = '5s';\nALTER TABLE "controller_processes" ADD COLUMN "next_build_note" TEXT;\n`;

export interface NextBuild {
  /** The directory to start its controller in. */
  root: string;
  /** Its runnerd.mjs's digest (sha-256, 16 hex), as runner/releases.json names it. */
  digest: string;
}

/** This checkout: the one holding runner/runnerd.mjs, found from this module or from the working directory. */
function checkout(): string {
  const candidates = [...(import.meta.dirname ? [path.resolve(import.meta.dirname, "..", "..", "..")] : []), process.cwd()];
  const found = candidates.find((dir) => fs.existsSync(path.join(dir, "runner", "runnerd.mjs")));
  if (!found) throw new Error(`no runner/runnerd.mjs to make the next build from (looked in ${candidates.join(", ")})`);
  return found;
}

/** Where a wave makes its next build: under the wave's directory (server/waves/run/controllers.ts). */
export function nextBuildDir(waveHome: string): string {
  return path.join(waveHome, "next-build");
}

/**
 * `protocol`: the runner protocol the next build declares (default: this build's) — a build
 * whose protocol moved past the window refuses this build's runners (docs/runner.md, "Versions").
 */
export function makeNextBuild(root: string, options: { releaseOld: boolean; migrations: boolean; protocol?: number }): NextBuild {
  const here = checkout();
  const from = path.join(here, "runner");
  const runner = path.join(root, "runner");
  fs.mkdirSync(runner, { recursive: true });
  let program = `${fs.readFileSync(path.join(from, "runnerd.mjs"), "utf8")}\n// the next build\n`;
  if (options.protocol !== undefined) program = program.replace(/^const PROTOCOL_VERSION = \d+;$/m, `const PROTOCOL_VERSION = ${options.protocol};`);
  fs.writeFileSync(path.join(runner, "runnerd.mjs"), program);
  fs.copyFileSync(path.join(from, "demo-agent.mjs"), path.join(runner, "demo-agent.mjs"));
  const manifest = parseRunnerReleases(fs.readFileSync(path.join(from, RELEASES_FILE), "utf8"), RELEASES_FILE);
  const digest = crypto.createHash("sha256").update(program).digest("hex").slice(0, 16);
  const releases = [...(options.releaseOld ? manifest.releases : []), { digest, protocol: protocolOf(program), added: "next" }];
  fs.writeFileSync(path.join(runner, RELEASES_FILE), JSON.stringify({ releases }));
  if (options.migrations) {
    const migrations = path.join(root, "prisma", "migrations");
    fs.cpSync(path.join(here, "prisma", "migrations"), migrations, { recursive: true });
    fs.mkdirSync(path.join(migrations, NEXT_BUILD_MIGRATION), { recursive: true });
    fs.writeFileSync(path.join(migrations, NEXT_BUILD_MIGRATION, "migration.sql"), NEXT_BUILD_MIGRATION_SQL);
  }
  return { root, digest };
}
