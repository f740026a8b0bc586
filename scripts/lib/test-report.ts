/** Reading Vitest's and Playwright's JSON reports for `npm test`'s closing summary. */
import fs from "node:fs";
import path from "node:path";

export interface FailingTest {
  file: string;
  title: string;
  message: string;
}

interface VitestFile {
  name: string;
  status: string;
  message?: string;
  startTime: number;
  endTime: number;
  assertionResults: Array<{ fullName: string; status: string; failureMessages: string[] }>;
}
interface PwTest {
  status: string;
  results: Array<{ duration: number; error?: { message?: string } }>;
}
interface PwSuite {
  file: string;
  title: string;
  suites?: PwSuite[];
  specs?: Array<{ title: string; file: string; tests: PwTest[] }>;
}

export function readJson<T>(file: string): T | null {
  try {
    return JSON.parse(fs.readFileSync(file, "utf8")) as T;
  } catch {
    return null;
  }
}

const cwdRelative = (file: string) => (path.isAbsolute(file) ? path.relative(process.cwd(), file) : file);

/** Every Vitest report in the directory (`npm test` runs Vitest twice: vitest.json, vitest-alone.json). */
function vitestFiles(resultsDir: string): VitestFile[] {
  let names: string[];
  try {
    names = fs.readdirSync(resultsDir).filter((n) => /^vitest.*\.json$/.test(n)).sort();
  } catch {
    return [];
  }
  return names.flatMap((n) => readJson<{ testResults: VitestFile[] }>(path.join(resultsDir, n))?.testResults ?? []);
}

/** The first non-empty line of an error, without colour codes. */
function firstLine(text: string | undefined): string {
  const plain = (text ?? "").replace(/\u001b\[[0-9;]*m/g, "");
  return plain.split("\n").find((l) => l.trim() !== "")?.trim().slice(0, 300) ?? "(no message)";
}

/** Every failed test of either report, with the first line of its error. */
export function failingTests(resultsDir: string): FailingTest[] {
  const out: FailingTest[] = [];
  for (const r of vitestFiles(resultsDir)) {
    const file = cwdRelative(r.name);
    const failed = r.assertionResults.filter((a) => a.status === "failed");
    for (const a of failed) out.push({ file, title: a.fullName, message: firstLine(a.failureMessages[0]) });
    // A file that failed outside any test (a hook, an import) has no failed test of its own.
    if (r.status === "failed" && failed.length === 0) out.push({ file, title: "(the file itself)", message: firstLine(r.message) });
  }
  const visit = (suite: PwSuite) => {
    for (const spec of suite.specs ?? [])
      for (const t of spec.tests)
        if (t.status === "unexpected" || t.status === "flaky")
          out.push({
            file: path.join("e2e", spec.file),
            title: `${spec.title}${t.status === "flaky" ? " (flaky)" : ""}`,
            message: firstLine(t.results.find((r) => r.error)?.error?.message),
          });
    for (const child of suite.suites ?? []) visit(child);
  };
  for (const suite of readJson<{ suites: PwSuite[] }>(path.join(resultsDir, "e2e.json"))?.suites ?? []) visit(suite);
  return out;
}

/** Each test file's wall time, from both reports, slowest first. */
export function slowestFiles(resultsDir: string, n: number): Array<{ file: string; seconds: number }> {
  const files: Array<{ file: string; seconds: number }> = [];
  for (const r of vitestFiles(resultsDir)) files.push({ file: cwdRelative(r.name), seconds: (r.endTime - r.startTime) / 1000 });
  const ms = (suite: PwSuite): number =>
    (suite.specs ?? []).reduce((sum, spec) => sum + spec.tests.reduce((t, test) => t + test.results.reduce((r, res) => r + res.duration, 0), 0), 0) +
    (suite.suites ?? []).reduce((sum, child) => sum + ms(child), 0);
  for (const suite of readJson<{ suites: PwSuite[] }>(path.join(resultsDir, "e2e.json"))?.suites ?? []) files.push({ file: path.join("e2e", suite.file), seconds: ms(suite) / 1000 });
  return files.sort((a, b) => b.seconds - a.seconds).slice(0, n);
}
