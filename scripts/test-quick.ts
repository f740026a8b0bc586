/**
 * `npm run test:quick`: the inner loop — typecheck, lint and the pure tests (Vitest's `unit`
 * project: every `*.test.ts` that is not `*.int.test.ts`) side by side, each one's output in
 * one piece as it ends. No build, no browser, no database: `npm test` runs everything.
 */
import { childEnv } from "../server/env";
import { nodeBin, runToEndHeld } from "./lib/processes";

const node = process.execPath;
const env = childEnv({ FORCE_COLOR: "1" });
const started = Date.now();
const timed = async (name: string, run: () => Promise<number>) => {
  const t0 = Date.now();
  const code = await run();
  return { name, ok: code === 0, seconds: (Date.now() - t0) / 1000 };
};

const steps = await Promise.all([
  // As npm test checks them: Next's route types first (.next/types, in tsconfig's include).
  timed("typecheck", async () => {
    const typegen = await runToEndHeld(node, [nodeBin("next/dist/bin/next"), "typegen"], env);
    return typegen !== 0 ? typegen : runToEndHeld(node, [nodeBin("typescript/bin/tsc"), "--noEmit"], env);
  }),
  // ESLint's cache: no rule here reads types or other files' contents, so a file's result depends on
  // the file and the config alone (both in the cache key). tsc is incremental by tsconfig.json.
  timed("lint", () =>
    runToEndHeld(node, [nodeBin("eslint/bin/eslint.js"), "--max-warnings", "0", "--cache", "--cache-location", "node_modules/.cache/eslint/", "."], env),
  ),
  timed("unit tests", () => runToEndHeld(node, [nodeBin("vitest/vitest.mjs"), "run", "--project", "unit"], env)),
]);
process.stdout.write("\n");
for (const s of steps) process.stdout.write(`  ${s.ok ? "✓" : "✗"} ${s.name.padEnd(12)} (${s.seconds.toFixed(1)} s)\n`);
const failed = steps.filter((s) => !s.ok);
process.stdout.write(`\ntest:quick: ${failed.length ? `FAILED (${failed.map((s) => s.name).join(", ")})` : "PASSED"} in ${((Date.now() - started) / 1000).toFixed(0)} s\n`);
process.exit(failed.length ? 1 : 0);
