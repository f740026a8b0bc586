import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { RELEASES_FILE, parseRunnerReleases, protocolOf, type RunnerReleaseManifest } from "../server/providers/runner-releases";

/**
 * `npm run runner:release`: records runner/runnerd.mjs as a released runner program in
 * runner/releases.json — its digest (what a runner's state names as `programDigest`) and the
 * protocol it declares (`PROTOCOL_VERSION`). A controller drives a runner only when its program
 * is in this list with a protocol the controller speaks (docs/rules.md §2.1, docs/runner.md
 * "Versions"), so every change to runnerd.mjs, a comment included, is recorded here in the same
 * commit; `runner/releases.test.ts` fails until it is.
 */

const dir = path.resolve(import.meta.dirname, "..", "runner");
const program = fs.readFileSync(path.join(dir, "runnerd.mjs"));
const digest = crypto.createHash("sha256").update(program).digest("hex").slice(0, 16);
const protocol = protocolOf(program.toString("utf8"));
const file = path.join(dir, RELEASES_FILE);
const manifest: RunnerReleaseManifest = parseRunnerReleases(fs.readFileSync(file, "utf8"), file);
const known = manifest.releases.find((r) => r.digest === digest);
if (known) {
  console.log(`runnerd.mjs ${digest} is already released (protocol ${known.protocol}, added ${known.added})`);
} else {
  manifest.releases.push({ digest, protocol, added: new Date().toISOString().slice(0, 10) });
  fs.writeFileSync(file, `${JSON.stringify(manifest, null, 2)}\n`);
  console.log(`released runnerd.mjs ${digest} (protocol ${protocol}) in runner/${RELEASES_FILE}`);
}
