import path from "node:path";
import { defineConfig } from "vitest/config";

const root = import.meta.dirname;

/**
 * Files that load the machine on their own run one at a time, after the rest, beside the browser
 * tests (scripts/test.ts): whole chaos waves (one with a busy loop per core, and kills timed
 * against the silence window) and the whole product (start-stop, supervise, stop-signals, service-recipes). Beside another
 * Vitest file each takes about twice as long. Every other file shares the two cores two at a
 * time: one file alone leaves about a third of the CPU idle (measured on 2 cores: Vitest 1020 s
 * with one worker, 865 s so). pool.int left this list once it held 40 runs in flight instead
 * of 200 (about 0.6 of a core; the 200-run figure is `npm run bench -- --pool`).
 */
const ALONE = ["server/waves/wave.int.test.ts", "scripts/start-stop.int.test.ts", "scripts/supervise.int.test.ts", "scripts/stop-signals.int.test.ts", "scripts/service-recipes.int.test.ts"];
/** One PostgreSQL server and a migrated template database per project that needs them. */
const DATABASE = "./server/test/global-setup.ts";
const EXCLUDE = ["node_modules/**", "e2e/**", ".next/**", ".data/**"];

export default defineConfig({
  resolve: {
    alias: {
      "@": root,
      // Next's server-only guard has no meaning under Vitest (STACK.md).
      "server-only": path.join(root, "node_modules/server-only/empty.js"),
    },
  },
  test: {
    pool: "forks",
    testTimeout: 60_000,
    hookTimeout: 120_000,
    reporters: ["default"],
    // Groups run one after another, lowest first: the pure tests answer first.
    projects: [
      {
        extends: true,
        // No database, no module state between files: one process runs many files.
        test: { name: "unit", include: ["**/*.test.ts"], exclude: [...EXCLUDE, "**/*.int.test.ts"], isolate: false, maxWorkers: 2, sequence: { groupOrder: 0 } },
      },
      {
        extends: true,
        test: { name: "integration", globalSetup: [DATABASE], include: ["**/*.int.test.ts"], exclude: [...EXCLUDE, ...ALONE], maxWorkers: 2, sequence: { groupOrder: 1 } },
      },
      {
        extends: true,
        test: { name: "alone", globalSetup: [DATABASE], include: ALONE, exclude: EXCLUDE, maxWorkers: 1, sequence: { groupOrder: 2 } },
      },
    ],
  },
});
