import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { failingTests, slowestFiles } from "./test-report";
import { nodeBin } from "./processes";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rw-report-"));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe("npm test's closing summary", () => {
  it("names each failed test of a real Vitest report, and a file that failed in a hook", () => {
    const root = path.join(dir, "suite");
    fs.mkdirSync(root);
    fs.writeFileSync(path.join(root, "vitest.config.mjs"), "export default { test: { include: ['*.check.mjs'] } };\n");
    // Not tests of this project: the input of a child Vitest, one test meant to pass and one meant
    // to fail (and, below, a hook that throws), so that its report holds a failure to be named.
    fs.writeFileSync(
      path.join(root, "a.check.mjs"),
      "import { it, expect } from 'vitest';\nit('passes', () => expect(1).toBe(1));\nit('adds wrong', () => expect(1 + 1).toBe(3));\n",
    );
    fs.writeFileSync(path.join(root, "b.check.mjs"), "import { it, beforeAll } from 'vitest';\nbeforeAll(() => { throw new Error('the database is gone'); });\nit('never runs', () => {});\n");
    const report = path.join(dir, "vitest.json");
    const ran = spawnSync(process.execPath, [nodeBin("vitest/vitest.mjs"), "run", "--root", root, "--reporter=json", `--outputFile.json=${report}`], {
      cwd: process.cwd(),
      encoding: "utf8",
    });
    expect(ran.status, ran.stderr).toBe(1);

    const failures = failingTests(dir);
    const adds = failures.find((f) => f.title === "adds wrong");
    expect(adds?.file).toMatch(/a\.check\.mjs$/);
    expect(adds?.message).toContain("expected 2 to be 3");
    const hook = failures.filter((f) => f.file.endsWith("b.check.mjs"));
    expect(hook.length).toBeGreaterThan(0);
    expect(hook.map((f) => f.message).join(" ")).toContain("the database is gone");
    expect(failures.some((f) => f.title === "passes")).toBe(false);
    expect(slowestFiles(dir, 10).map((f) => path.basename(f.file)).sort()).toEqual(["a.check.mjs", "b.check.mjs"]);
  }, 60_000);

  it("names a Playwright test that failed or was flaky, not one that passed", () => {
    const e2e = {
      suites: [
        {
          file: "runs.spec.ts",
          title: "runs.spec.ts",
          specs: [
            { title: "shows Retry", file: "runs.spec.ts", tests: [{ status: "expected", results: [{ duration: 10 }] }] },
            { title: "retries once", file: "runs.spec.ts", tests: [{ status: "unexpected", results: [{ duration: 5, error: { message: "\u001b[31mError: expect(locator).toBeVisible() failed\u001b[39m\n\nLocator: …" } }] }] },
          ],
          suites: [{ file: "runs.spec.ts", title: "group", specs: [{ title: "reloads", file: "runs.spec.ts", tests: [{ status: "flaky", results: [{ duration: 1, error: { message: "Timeout 5000ms" } }, { duration: 1 }] }] }] }],
        },
      ],
    };
    const pwDir = path.join(dir, "pw");
    fs.mkdirSync(pwDir);
    fs.writeFileSync(path.join(pwDir, "e2e.json"), JSON.stringify(e2e));
    expect(failingTests(pwDir)).toEqual([
      { file: path.join("e2e", "runs.spec.ts"), title: "retries once", message: "Error: expect(locator).toBeVisible() failed" },
      { file: path.join("e2e", "runs.spec.ts"), title: "reloads (flaky)", message: "Timeout 5000ms" },
    ]);
  });

  it("reads every Vitest report of the run (npm test runs Vitest twice), not only the first", () => {
    const twoDir = path.join(dir, "two");
    fs.mkdirSync(twoDir);
    const file = (name: string, failed: boolean, seconds: number) => ({
      name: path.join(process.cwd(), name),
      status: failed ? "failed" : "passed",
      startTime: 1_000,
      endTime: 1_000 + seconds * 1000,
      assertionResults: [{ fullName: `${name} works`, status: failed ? "failed" : "passed", failureMessages: failed ? ["Error: it broke"] : [] }],
    });
    fs.writeFileSync(path.join(twoDir, "vitest.json"), JSON.stringify({ testResults: [file("a.int.test.ts", false, 3)] }));
    fs.writeFileSync(path.join(twoDir, "vitest-alone.json"), JSON.stringify({ testResults: [file("b.int.test.ts", true, 9)] }));
    expect(failingTests(twoDir)).toEqual([{ file: "b.int.test.ts", title: "b.int.test.ts works", message: "Error: it broke" }]);
    expect(slowestFiles(twoDir, 10)).toEqual([
      { file: "b.int.test.ts", seconds: 9 },
      { file: "a.int.test.ts", seconds: 3 },
    ]);
  });

  it("says nothing when there is no report", () => {
    expect(failingTests(path.join(dir, "none"))).toEqual([]);
  });
});
