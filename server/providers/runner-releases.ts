import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { z } from "zod";

/**
 * The released runner programs (runner/releases.json): every runnerd.mjs a controller may meet
 * on a sandbox, by digest, with the protocol it speaks. A controller drives a runner whose
 * program is listed with a protocol in its window — its own protocol and the one before
 * (docs/runner.md, "Versions"); §2.1's staged check judges it (engine/lease-binding.ts).
 */

export const RELEASES_FILE = "releases.json";

const manifestSchema = z.object({
  $comment: z.string().optional(),
  releases: z
    .array(
      z.object({
        digest: z.string().regex(/^[0-9a-f]{16}$/, "a digest is 16 hex characters (sha-256 of runnerd.mjs)"),
        protocol: z.number().int().positive(),
        added: z.string(),
      }),
    )
    .min(1),
});
export type RunnerReleaseManifest = z.infer<typeof manifestSchema>;

/** The manifest, or an error naming the file and what is wrong in it. */
export function parseRunnerReleases(text: string, file: string): RunnerReleaseManifest {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new Error(`${file} is not JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
  const parsed = manifestSchema.safeParse(raw);
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    throw new Error(`${file}: ${first ? `${first.path.join(".") || "(top)"}: ${first.message}` : "not a runner release manifest"}`);
  }
  return parsed.data;
}

/** The protocol a runnerd.mjs declares (`const PROTOCOL_VERSION = N;`). */
export function protocolOf(programText: string): number {
  const m = /^const PROTOCOL_VERSION = (\d+);$/m.exec(programText);
  if (!m) throw new Error("runnerd.mjs declares no PROTOCOL_VERSION");
  return Number(m[1]);
}

/** What a controller shipping `program` drives: the released programs and its protocol window. */
export function releasesFor(manifest: RunnerReleaseManifest, program: { digest: string; protocol: number }): { releases: Record<string, number>; speaks: { min: number; max: number } } {
  const releases: Record<string, number> = {};
  for (const r of manifest.releases) releases[r.digest] = r.protocol;
  // The program this controller ships is always its own release.
  releases[program.digest] = program.protocol;
  return { releases, speaks: { min: Math.max(1, program.protocol - 1), max: program.protocol } };
}

/** What a controller shipping the runner programs in `dir` (a `runner/` directory) drives: its manifest, its runnerd's digest and protocol. */
export function releasesIn(dir: string): { releases: Record<string, number>; speaks: { min: number; max: number } } {
  const program = fs.readFileSync(path.join(dir, "runnerd.mjs"));
  const file = path.join(dir, RELEASES_FILE);
  const manifest = parseRunnerReleases(fs.readFileSync(file, "utf8"), file);
  return releasesFor(manifest, { digest: crypto.createHash("sha256").update(program).digest("hex").slice(0, 16), protocol: protocolOf(program.toString("utf8")) });
}
