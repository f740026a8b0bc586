/**
 * `npm test`: typecheck, lint, Vitest (unit + integration against a real PostgreSQL),
 * a production build, and Playwright in Chromium against it. Every step runs (the
 * browser tests need the build); the last line counts everything; exit 1 on any failure.
 */
import fs from "node:fs";
import path from "node:path";
import pg from "pg";
import { openDatabase } from "../server/db/embedded";
import { withDatabase } from "../server/db/url";
import { childEnv, env } from "../server/env";
import { findChromium, HOW_TO_GET_CHROMIUM } from "./lib/chromium";
import { admin } from "./lib/admin";
import { CHECKS, nodeBin, runToEnd, stopRunning } from "./lib/processes";
import { onStopRequest } from "../server/lib/stop-signals";
import { failingTests, readJson, slowestFiles } from "./lib/test-report";

interface Step {
  name: string;
  ok: boolean;
  detail: string;
  seconds: number;
}

const steps: Step[] = [];
const resultsDir = path.resolve(".data/test-results");
fs.mkdirSync(resultsDir, { recursive: true });
const say = (line: string) => process.stdout.write(`\n▶ ${line}\n`);

// `npm test -- --only vitest,e2e` runs some steps (a developer's shortcut; CI runs all).
const onlyArg = process.argv.indexOf("--only");
const only = onlyArg >= 0 ? new Set((process.argv[onlyArg + 1] ?? "").split(",")) : null;
// In the order they run.
const STEP_KEYS: Record<string, string> = { typecheck: "typecheck", lint: "lint", "next build": "build", "vitest (unit + integration)": "vitest", "vitest (alone)": "vitest", "playwright (e2e in Chromium)": "e2e" };

/** Set once a stop was asked for: no further step starts. */
let stopping = false;

async function step(name: string, fn: () => Promise<{ ok: boolean; detail: string }>): Promise<boolean> {
  if (only && !only.has(STEP_KEYS[name] ?? name)) return true;
  if (stopping) return false;
  say(name);
  const started = Date.now();
  let outcome: { ok: boolean; detail: string };
  try {
    outcome = await fn();
  } catch (err) {
    outcome = { ok: false, detail: err instanceof Error ? err.message : String(err) };
  }
  steps.push({ name, ...outcome, seconds: (Date.now() - started) / 1000 });
  return outcome.ok;
}

/**
 * Stopped however it is told (SIGINT, SIGTERM, SIGHUP, its launcher's exit; server/lib/stop-signals.ts):
 * the step running now is stopped — Vitest and Playwright, and with them what they started —
 * then this run's database, and nothing is left behind. A second Ctrl-C exits at once.
 */
let stopDatabase: () => Promise<void> = () => Promise.resolve();
onStopRequest((request) => {
  if (request.forced) process.exit(130);
  if (stopping) return;
  stopping = true;
  process.stdout.write(`\nnpm test: stopping (${request.why})…\n`);
  void (async () => {
    // Playwright stops its web server in order; a drain takes the controller up to 30 s.
    await stopRunning(45_000);
    await stopDatabase().catch((err: unknown) => process.stdout.write(`  embedded PostgreSQL did not stop: ${String(err)}\n`));
    process.stdout.write("npm test: stopped\n");
    process.exit(request.reason === "SIGINT" ? 130 : 143);
  })();
});

const node = process.execPath;
const baseEnv = childEnv({ NEXT_TELEMETRY_DISABLED: "1", FORCE_COLOR: "1" });
const started = Date.now();

// Side by side: each is one process on one core (measured: 21 s and 17 s one after the other).
await Promise.all([
  step("typecheck", async () => {
    // The build below does not check the types again.
    const typegen = await runToEnd(node, CHECKS.typegen, baseEnv);
    if (typegen !== 0) return { ok: false, detail: `next typegen: exit ${typegen}` };
    const code = await runToEnd(node, CHECKS.typecheck, baseEnv);
    return { ok: code === 0, detail: code === 0 ? "ok" : "type errors" };
  }),
  step("lint", async () => {
    const code = await runToEnd(node, CHECKS.lint, baseEnv);
    return { ok: code === 0, detail: code === 0 ? "ok" : "lint errors" };
  }),
]);

// One database server for the whole run: Vitest and the browser tests reuse it. One left by a
// run that was killed (nobody connected) is taken over and stopped with this one.
const db = await openDatabase({ env, log: (l) => process.stdout.write(`  ${l}\n`), adoptLeftover: true });
// The steps it stopped have just exited: their connections' backends get a moment to end.
stopDatabase = () => (db.startedHere ? db.stop({ graceMs: 10_000 }) : Promise.resolve());

// Before Vitest: the start/stop tests run the whole product, dashboard included.
const built = await step("next build", async () => {
  const code = await runToEnd(node, [nodeBin("next/dist/bin/next"), "build"], { ...baseEnv, RUNWARDEN_BUILD_TYPECHECK: "off" });
  return { ok: code === 0, detail: code === 0 ? "ok" : `exit ${code}` };
});

/** One Vitest invocation over some of its projects, its JSON report kept for the closing summary. */
async function vitest(projects: string[], reportName: string, prefix?: string) {
  const report = path.join(resultsDir, reportName);
  fs.rmSync(report, { force: true });
  const code = await runToEnd(
    node,
    [nodeBin("vitest/vitest.mjs"), "run", ...projects.flatMap((p) => ["--project", p]), "--reporter=default", "--reporter=json", `--outputFile.json=${report}`],
    baseEnv,
    { prefix },
  );
  const counts = readJson<{ numPassedTests: number; numFailedTests: number; numPendingTests: number; numTodoTests: number }>(report);
  const detail = counts
    ? `${counts.numPassedTests} passed, ${counts.numFailedTests} failed${counts.numPendingTests + counts.numTodoTests ? `, ${counts.numPendingTests + counts.numTodoTests} skipped` : ""}`
    : "no report";
  return { ok: code === 0 && !!counts && counts.numFailedTests === 0, detail };
}

await step("vitest (unit + integration)", () => vitest(["unit", "integration"], "vitest.json"));

// The files that run one at a time (vitest.config.ts's ALONE) leave a core mostly waiting on
// timers, kills and stalls; the browser tests are a browser and one product waiting on pages.
// Side by side they fill the two cores (each prints its lines with its own prefix).
await Promise.all([
  step("vitest (alone)", () => vitest(["alone"], "vitest-alone.json", "[alone] ")),
  step("playwright (e2e in Chromium)", async () => {
    if (!built) return { ok: false, detail: "not run: the build failed" };
    const chromium = findChromium(env.CHROMIUM_PATH);
    if (!chromium) {
      process.stderr.write(`${HOW_TO_GET_CHROMIUM}\n`);
      return { ok: false, detail: "no Chromium (see above)" };
    }
    const name = `rw_e2e_${Date.now().toString(36)}`;
    const url = withDatabase(db.adminUrl, name);
    await admin(db.adminUrl, `CREATE DATABASE ${pg.escapeIdentifier(name)}`);
    const report = path.join(resultsDir, "e2e.json");
    fs.rmSync(report, { force: true });
    try {
      const code = await runToEnd(
        node,
        [nodeBin("@playwright/test/cli.js"), "test"],
        childEnv({ ...baseEnv, E2E_DATABASE_URL: url, E2E_JSON_REPORT: report, CHROMIUM_PATH: chromium }),
        { prefix: "[e2e] " },
      );
      const stats = readJson<{ stats: { expected: number; unexpected: number; flaky: number; skipped: number } }>(report)?.stats;
      const detail = stats ? `${stats.expected} passed, ${stats.unexpected + stats.flaky} failed${stats.skipped ? `, ${stats.skipped} skipped` : ""}` : "no report";
      return { ok: code === 0 && !!stats && stats.unexpected + stats.flaky === 0, detail };
    } finally {
      // And the emulator's, which `npm start` names after the product's (scripts/start.ts).
      for (const database of [name, `${name}_emulator`]) await admin(db.adminUrl, `DROP DATABASE IF EXISTS ${pg.escapeIdentifier(database)} WITH (FORCE)`).catch(() => {});
    }
  }),
]);

if (db.startedHere) await db.stop({ graceMs: 10_000 });

const failed = steps.filter((s) => !s.ok);
// Named again at the end: a long run's log is often read from its tail only.
const failures = failingTests(resultsDir);
if (failures.length > 0) {
  process.stdout.write(`\n  the failing tests (${failures.length}):\n`);
  for (const f of failures.slice(0, 30)) process.stdout.write(`    ✗ ${f.file} › ${f.title}\n      ${f.message}\n`);
  if (failures.length > 30) process.stdout.write(`    … and ${failures.length - 30} more (.data/test-results/*.json)\n`);
}
const slowest = slowestFiles(resultsDir, 10);
if (slowest.length > 0) {
  process.stdout.write("\n  the ten slowest test files:\n");
  for (const f of slowest) process.stdout.write(`    ${f.seconds.toFixed(1).padStart(6)} s  ${f.file}\n`);
}
process.stdout.write("\n");
// Typecheck and lint end in either order: the summary lists the steps as they are run.
const order = Object.keys(STEP_KEYS);
steps.sort((a, b) => order.indexOf(a.name) - order.indexOf(b.name));
for (const s of steps) process.stdout.write(`  ${s.ok ? "✓" : "✗"} ${s.name.padEnd(30)} ${s.detail} (${s.seconds.toFixed(1)} s)\n`);
const total = ((Date.now() - started) / 1000).toFixed(0);
process.stdout.write(
  `\nnpm test: ${steps.map((s) => `${s.name.replace(" (alone)", "-alone").split(" ")[0]} ${s.ok ? s.detail : `FAILED (${s.detail})`}`).join(" · ")} — ${failed.length ? "FAILED" : "PASSED"} in ${total} s\n`,
);
process.exit(failed.length ? 1 : 0);
