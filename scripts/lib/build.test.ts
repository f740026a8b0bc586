import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { buildIsCurrent } from "./build";

const root = fs.mkdtempSync(path.join(os.tmpdir(), "rw-build-"));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

function touch(file: string, at: Date) {
  const p = path.join(root, file);
  fs.mkdirSync(path.dirname(p), { recursive: true });
  fs.writeFileSync(p, "x");
  fs.utimesSync(p, at, at);
}

describe("npm start's stale-build check", () => {
  it("a changed source makes the build stale; a changed test or test support does not", () => {
    const built = new Date(Date.now() - 60_000);
    const later = new Date();
    touch("server/engine/decide.ts", new Date(built.getTime() - 1_000));
    touch(".next/BUILD_ID", built);
    expect(buildIsCurrent(root)).toEqual({ current: true, reason: "build is current" });

    touch("server/engine/decide.test.ts", later);
    touch("server/controller/pool.int.test.ts", later);
    touch("server/test/outage.ts", later);
    expect(buildIsCurrent(root).current).toBe(true);

    touch("server/engine/decide.ts", later);
    expect(buildIsCurrent(root)).toEqual({ current: false, reason: `${path.join("server", "engine", "decide.ts")} changed since the last build` });
  });
});
