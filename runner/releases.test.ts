import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, test } from "vitest";
import { RUNNER_PROTOCOL_VERSION } from "../server/engine";
import { parseRunnerReleases, protocolOf, RELEASES_FILE, releasesFor } from "../server/providers/runner-releases";

/**
 * runner/releases.json lists every released runnerd.mjs (docs/runner.md, "Versions"): a change
 * to runnerd.mjs, a comment included, is recorded with `npm run runner:release` in the same
 * commit, or a controller of this build would refuse the runners of the build it ships.
 */

const dir = import.meta.dirname;
const program = fs.readFileSync(path.join(dir, "runnerd.mjs"));
const digest = crypto.createHash("sha256").update(program).digest("hex").slice(0, 16);
const manifest = parseRunnerReleases(fs.readFileSync(path.join(dir, RELEASES_FILE), "utf8"), RELEASES_FILE);

describe("the released runner programs", () => {
  test("runnerd.mjs as it is now is released, with the protocol it declares (else: npm run runner:release)", () => {
    expect(manifest.releases.find((r) => r.digest === digest), `runnerd.mjs ${digest} is not in runner/releases.json: run npm run runner:release`).toEqual(
      expect.objectContaining({ digest, protocol: protocolOf(program.toString("utf8")) }),
    );
  });

  test("the protocol runnerd.mjs declares is the one the controller's wire schema reads (server/engine/runner-state.ts)", () => {
    expect(protocolOf(program.toString("utf8"))).toBe(RUNNER_PROTOCOL_VERSION);
  });

  test("each digest is listed once, and no release speaks a protocol newer than runnerd.mjs", () => {
    const digests = manifest.releases.map((r) => r.digest);
    expect(new Set(digests).size).toBe(digests.length);
    const current = protocolOf(program.toString("utf8"));
    expect(manifest.releases.filter((r) => r.protocol > current)).toEqual([]);
  });

  test("the window: this protocol and the one before", () => {
    expect(releasesFor({ releases: [{ digest: "a".repeat(16), protocol: 2, added: "x" }] }, { digest: "b".repeat(16), protocol: 3 })).toEqual({
      releases: { ["a".repeat(16)]: 2, ["b".repeat(16)]: 3 },
      speaks: { min: 2, max: 3 },
    });
  });

  test("a manifest that is not one is refused with the file and the field named", () => {
    expect(() => parseRunnerReleases("{", "releases.json")).toThrow(/releases.json is not JSON/);
    expect(() => parseRunnerReleases('{"releases":[{"digest":"xyz","protocol":1,"added":"d"}]}', "releases.json")).toThrow(/releases.json: releases.0.digest: a digest is 16 hex/);
    expect(() => protocolOf("// no constant")).toThrow(/declares no PROTOCOL_VERSION/);
  });
});
