/**
 * `npm run test:quick`: the inner loop — typecheck, lint and the pure tests (Vitest's `unit`
 * project: every `*.test.ts` that is not `*.int.test.ts`) side by side, each one's output in
 * one piece as it ends. No build, no browser, no database: `npm test` runs everything.
 */
import { childEnv } from "../server/env";
import { CHECKS, nodeBin, runToEnd } from "./lib/processes";

const node = process.execPath;
const env = childEnv({ FORCE_COLOR: "1" });
const started = Date.now();
const timed = async (name: string, run: () => Promise<number>) => {
  const t0 = Date.now();
  const code = await run();
  return { name, ok: code === 0, seconds: (Date.now() - t0) / 1000 };
};

const held = { held: true };
const steps = await Promise.all([
  // As npm test checks them: Next's route types first.
  timed("typecheck", async () => {
    const typegen = await runToEnd(node, CHECKS.typegen, env, held);
    return typegen !== 0 ? typegen : runToEnd(node, CHECKS.typecheck, env, held);
  }),
  // ESLint's cache: no rule here reads types or other files' contents, so a file's result depends on
  // the file and the config alone (both in the cache key). tsc is incremental by tsconfig.json.
  timed("lint", () => runToEnd(node, [...CHECKS.lint, "--cache", "--cache-location", "node_modules/.cache/eslint/"], env, held)),
  timed("unit tests", () => runToEnd(node, [nodeBin("vitest/vitest.mjs"), "run", "--project", "unit"], env, held)),
]);
process.stdout.write("\n");
for (const s of steps) process.stdout.write(`  ${s.ok ? "✓" : "✗"} ${s.name.padEnd(12)} (${s.seconds.toFixed(1)} s)\n`);
const failed = steps.filter((s) => !s.ok);
process.stdout.write(`\ntest:quick: ${failed.length ? `FAILED (${failed.map((s) => s.name).join(", ")})` : "PASSED"} in ${((Date.now() - started) / 1000).toFixed(0)} s\n`);
process.exit(failed.length ? 1 : 0);
