import { defineConfig, globalIgnores } from "eslint/config";
import nextVitals from "eslint-config-next/core-web-vitals";
import nextTs from "eslint-config-next/typescript";
import { runwardenPlugin } from "./lint/client-boundary.mjs";

/** Modules that would give the engine I/O, a clock of its own, or a framework. */
const ENGINE_FORBIDDEN = [
  { group: ["@prisma/*", "prisma", "pg"], message: "server/engine is pure: no database (docs/rules.md §2)." },
  { regex: "(^|/)(db|generated)(/|$)", message: "server/engine is pure: no database (docs/rules.md §2)." },
  { group: ["@trpc/*"], message: "server/engine is pure: no tRPC." },
  { group: ["next", "next/*", "react", "react/*", "react-dom", "react-dom/*", "server-only"], message: "server/engine is pure: no Next.js or React." },
  { group: ["node:fs", "node:fs/*", "fs", "fs/*", "node:child_process", "child_process", "node:net", "net", "node:http", "http", "node:https", "https", "node:os", "os"], message: "server/engine is pure: no I/O." },
  { regex: "(^|/)(providers|controller|trpc|emulator|process|env)(/|$)", message: "server/engine must not depend on the shell around it." },
];

/**
 * server/shared holds what the browser may import: pure modules that import zod, each other and
 * the pure engine, nothing else (no database, no I/O, no Node built-ins).
 */
const SHARED_FORBIDDEN = [
  { regex: "^(?!zod$|\\./|\\.\\./engine/)", message: "server/shared is pure and browser-safe: it imports zod, itself and server/engine only." },
];

/** What may import the test support under server/test/: tests and their setup, nothing that ships. */
const TEST_FILES = ["**/*.test.ts", "**/*.test.tsx", "e2e/**", "server/test/**", "vitest.config.ts", "playwright.config.ts"];

/**
 * The web's boundaries (ARCHITECTURE.md, "The rooms"). typescript-eslint's variant of
 * no-restricted-imports, so these do not replace the core rule's settings of other blocks.
 */
const CONTROLLER = { regex: "(^|/)controller(/|$)", message: "Reach the controller through server/services (the service module), never its internals." };
const ROUTER_FORBIDDEN = [
  CONTROLLER,
  { regex: "(^|/)db(/|$)", allowTypeImports: true, message: "Routers query through read models and services (server/runs, server/intents, …), never the database directly." },
];
/** Read models: what they need from the provider or this process comes in as server/services/observer.ts's Observer. */
const READ_MODELS = ["server/runs/**/*.ts", "server/intents/**/*.ts", "server/sandboxes/**/*.ts", "server/overview.ts", "server/live.ts", "server/audit/**/*.ts"];
/** The orphans page's actions: they go through the controller's teardown (called by server/services). */
const SANDBOX_ACTIONS = ["server/sandboxes/reclaim.ts", "server/sandboxes/destroy-unrecorded.ts"];

export default defineConfig([
  ...nextVitals,
  ...nextTs,
  globalIgnores([".next/**", ".data/**", "node_modules/**", "server/db/generated/**", "next-env.d.ts", "test-results/**", "playwright-report/**", "e2e/screenshots/**"]),
  {
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/switch-exhaustiveness-check": "off",
      // One reader of process.env: server/env.ts.
      "no-restricted-properties": ["error", { object: "process", property: "env", message: "Read configuration through server/env.ts." }],
    },
  },
  {
    // runner/*.mjs runs inside a sandbox, where server/env.ts does not exist.
    files: ["server/env.ts", "*.config.ts", "*.config.mjs", "scripts/prisma-generate.mjs", "runner/*.mjs"],
    rules: { "no-restricted-properties": "off" },
  },
  {
    // Test support never ships: product code (and the scripts) may not import server/test/.
    // A path rule, not no-restricted-imports, so that no other block's import list replaces it.
    files: ["**/*.{js,jsx,mjs,cjs,ts,tsx,mts,cts}"],
    ignores: TEST_FILES,
    rules: {
      "import/no-restricted-paths": ["error", { zones: [{ target: ".", from: "./server/test", message: "Test support never ships: only tests import server/test/ (ARCHITECTURE.md)." }] }],
    },
  },
  {
    files: ["server/engine/**/*.ts"],
    rules: {
      "no-restricted-imports": ["error", { patterns: ENGINE_FORBIDDEN }],
      "no-restricted-syntax": [
        "error",
        { selector: "CallExpression[callee.object.name='Date'][callee.property.name='now']", message: "The engine takes `now` as an argument." },
        { selector: "NewExpression[callee.name='Date'][arguments.length=0]", message: "The engine takes `now` as an argument." },
        { selector: "CallExpression[callee.object.name='Math'][callee.property.name='random']", message: "The engine is deterministic." },
      ],
    },
  },
  {
    files: ["server/shared/**/*.ts"],
    rules: { "no-restricted-imports": ["error", { patterns: SHARED_FORBIDDEN }] },
  },
  {
    // Client code (components/** and every "use client" file) reaches the server side only
    // through server/shared; lint/client-boundary.mjs says how it tells client files apart.
    files: ["app/**/*.{ts,tsx}", "components/**/*.{ts,tsx}", "trpc/**/*.{ts,tsx}"],
    ignores: ["**/*.test.ts", "**/*.test.tsx"],
    plugins: { runwarden: runwardenPlugin },
    rules: { "runwarden/client-imports-shared": "error" },
  },
  {
    files: ["server/trpc/routers/**/*.ts"],
    ignores: ["**/*.test.ts"],
    rules: { "@typescript-eslint/no-restricted-imports": ["error", { patterns: ROUTER_FORBIDDEN }] },
  },
  {
    files: READ_MODELS,
    ignores: ["**/*.test.ts", ...SANDBOX_ACTIONS],
    rules: { "@typescript-eslint/no-restricted-imports": ["error", { patterns: [{ ...CONTROLLER, message: "A read model does not import the controller: take an Observer (server/services/observer.ts)." }] }] },
  },
]);
