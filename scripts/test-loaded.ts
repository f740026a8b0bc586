/**
 * `npm run test:loaded -- [--times N] FILE…`: runs the given Vitest files N times in a row (3 by
 * default) while a busy loop burns each core, and stops at the first red run. CI runs right after
 * a session on the same machine, so a test that starts controllers, emulators or waves must pass
 * on a machine that is busy; this is how that is shown (docs/development.md).
 */
import os from "node:os";
import { Command, InvalidArgumentError } from "commander";
import { childEnv } from "../server/env";
import { nodeBin, runToEnd, startBusyLoops } from "./lib/processes";

const cli = new Command("test:loaded")
  .option("--times <n>", "runs in a row", (v) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError("a whole number of at least 1");
    return n;
  }, 3)
  .argument("<files...>", "Vitest files (or filters) to run")
  .parse(process.argv);
const { times } = cli.opts<{ times: number }>();
const files = cli.args;

const cores = os.availableParallelism();
// They never outlive this script, however it ends (startBusyLoops).
const { stop: stopBurners } = startBusyLoops(cores);
process.on("exit", stopBurners);
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.on(signal, () => process.exit(130));

const results: Array<{ run: number; ok: boolean; seconds: number }> = [];
for (let run = 1; run <= times; run++) {
  process.stdout.write(`\n▶ run ${run} of ${times}, ${cores} busy loop(s) beside it: ${files.join(" ")}\n`);
  const t0 = Date.now();
  const code = await runToEnd(process.execPath, [nodeBin("vitest/vitest.mjs"), "run", ...files], childEnv({ FORCE_COLOR: "1" }));
  results.push({ run, ok: code === 0, seconds: (Date.now() - t0) / 1000 });
  if (code !== 0) break;
}
stopBurners();
process.stdout.write("\n");
for (const r of results) process.stdout.write(`  ${r.ok ? "✓" : "✗"} run ${r.run}: ${r.seconds.toFixed(1)} s\n`);
const passed = results.filter((r) => r.ok).length;
process.stdout.write(`\ntest:loaded: ${passed} of ${times} runs passed under ${cores} busy loop(s)\n`);
process.exit(passed === times ? 0 : 1);
