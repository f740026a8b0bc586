import { defineConfig } from "@playwright/test";
import { CHROMIUM_ARGS, findChromium } from "./scripts/lib/chromium";
import { clusterPort } from "./server/db/cluster";

// `npm test` (scripts/test.ts) creates a throwaway database and passes it here; run
// alone, the e2e tests use `runwarden_e2e` on the embedded server.
const port = Number(process.env.E2E_PORT ?? 3199);
const pgPort = clusterPort({
  dataRoot: process.env.RUNWARDEN_DATA_DIR ?? ".data",
  port: process.env.RUNWARDEN_PG_PORT ? Number(process.env.RUNWARDEN_PG_PORT) : undefined,
});
const databaseUrl = process.env.E2E_DATABASE_URL ?? `postgresql://postgres:runwarden@127.0.0.1:${pgPort}/runwarden_e2e`;
process.env.E2E_DATABASE_URL = databaseUrl;
const executablePath = findChromium(process.env.CHROMIUM_PATH) ?? undefined;

export default defineConfig({
  testDir: "e2e",
  outputDir: "test-results",
  timeout: 60_000,
  expect: { timeout: 15_000 },
  fullyParallel: false,
  workers: 1,
  forbidOnly: true,
  // After the product is up: the test accounts (e2e/accounts.ts), each signed in once.
  globalSetup: "./e2e/global-setup.ts",
  reporter: [["list"], ["json", { outputFile: process.env.E2E_JSON_REPORT ?? "test-results/e2e.json" }]],
  use: {
    baseURL: `http://127.0.0.1:${port}`,
    launchOptions: { executablePath, args: CHROMIUM_ARGS },
    screenshot: "only-on-failure",
    trace: "off",
  },
  projects: [
    // Every spec runs signed in as the operator unless it opens a context as someone else.
    { name: "chromium", use: { browserName: "chromium", storageState: "test-results/auth/operator.json" } },
  ],
  webServer: {
    // As npm start runs it: one node process (exec: no shell between Playwright and the start
    // script), so the start script sees Playwright go however it goes, and stops the product.
    command: "exec node --import tsx scripts/start.ts",
    url: `http://127.0.0.1:${port}/api/trpc/runs.countByStatus`,
    // The whole product, as `npm start` runs it, beside any developer instance.
    env: {
      PORT: String(port),
      DATABASE_URL: databaseUrl,
      HOSTNAME: "127.0.0.1",
      EMULATOR_PORT: String(port + 700),
      RUNWARDEN_CONTROLLER_HOME: `.data/e2e-controller-${port}`,
      RUNWARDEN_TURN_MS: "100",
      RUNWARDEN_RETRY_DELAY_MS: "500",
      RUNWARDEN_SWEEP_INTERVAL_MS: "1000",
      RUNWARDEN_SESSION_OPEN_TIMEOUT_MS: "2000",
      LOG_LEVEL: "warn",
      // The browser tests make their own data; a background wave would race their counts.
      RUNWARDEN_FIRST_BOOT_WAVE: "off",
      // The alerts spec's webhook receiver listens on loopback, which an endpoint reaches only when allowed (docs/alerts.md).
      RUNWARDEN_ALERT_ALLOW_NETWORKS: "127.0.0.1/32",
    },
    reuseExistingServer: false,
    timeout: 180_000,
    stdout: "pipe",
    stderr: "pipe",
    // Stopped as a process manager stops it, in order: a controller's drain takes up to 30 s.
    gracefulShutdown: { signal: "SIGTERM", timeout: 45_000 },
  },
});
