/**
 * `npm run test:quick`: the inner loop — typecheck and lint side by side, then the pure tests
 * (every `*.test.ts` that is not `*.int.test.ts`, and not the CLI's, which starts a process per
 * case). No build, no browser, no integration test: `npm test` runs everything.
 */
import { childEnv } from "../server/env";
import { nodeBin, runToEnd } from "./lib/processes";

const node = process.execPath;
const env = childEnv({ FORCE_COLOR: "1" });
const started = Date.now();
const timed = async (name: string, run: () => Promise<number>) => {
  const t0 = Date.now();
  const code = await run();
  return { name, ok: code === 0, seconds: (Date.now() - t0) / 1000 };
};

const checks = await Promise.all([
  timed("typecheck", () => runToEnd(node, [nodeBin("typescript/bin/tsc"), "--noEmit"], env)),
  timed("lint", () => runToEnd(node, [nodeBin("eslint/bin/eslint.js"), "--max-warnings", "0", "."], env)),
]);
const unit = await timed("unit tests", () =>
  runToEnd(node, [nodeBin("vitest/vitest.mjs"), "run", "--maxWorkers", "2", "--exclude", "**/*.int.test.ts", "--exclude", "server/cli/runwarden.test.ts"], env),
);
const steps = [...checks, unit];
process.stdout.write("\n");
for (const s of steps) process.stdout.write(`  ${s.ok ? "✓" : "✗"} ${s.name.padEnd(12)} (${s.seconds.toFixed(1)} s)\n`);
const failed = steps.filter((s) => !s.ok);
process.stdout.write(`\ntest:quick: ${failed.length ? `FAILED (${failed.map((s) => s.name).join(", ")})` : "PASSED"} in ${((Date.now() - started) / 1000).toFixed(0)} s\n`);
process.exit(failed.length ? 1 : 0);
