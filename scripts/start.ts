/**
 * `npm start`: the whole product with one command — database (embedded unless
 * DATABASE_URL is set), migrations, a production build when none is current, and the
 * dashboard. Ctrl-C, SIGTERM or SIGHUP (a closed terminal) stops everything this command
 * started, in reverse order; so does its launcher's exit, and each part stops itself if this
 * script dies without stopping it (scripts/lib/parent-guard.mjs).
 */
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { openDatabase, type DatabaseHandle } from "../server/db/embedded";
import { publicUrl } from "../server/auth/auth";
import { ensureFirstOperator } from "../server/auth/users";
import { createDb } from "../server/db/client";
import { migrate } from "../server/db/migrate";
import { acquireFileLock } from "../server/lib/file-lock";
import { databaseOf, describeUrl } from "../server/db/url";
import { childEnv, env } from "../server/env";
import { onStopRequest } from "../server/lib/stop-signals";
import { buildIsCurrent } from "./lib/build";
import { emulatorUrl } from "../server/emulator/config";
import { controllerArgs } from "../server/controller/program";
import { Supervisor } from "./lib/supervise";
import { nodeBin, portFree, prettyLogLine, runToEnd, startService, stopService, tsxArgs, waitForHttp, WEB_SERVER_ENV, webServerArgs, type Service } from "./lib/processes";

const say = (line: string) => process.stdout.write(`runwarden: ${line}\n`);
/** What `npm start` runs, in start order; stopped in reverse. */
const parts: Array<{ stop: () => Promise<void> }> = [];
let db: DatabaseHandle | null = null;
let stopping = false;

async function shutdown(code: number, why: string): Promise<void> {
  // Asked more than once (a signal, then its launcher's exit; a start that failed): the first stops.
  if (stopping) return;
  stopping = true;
  say(`stopping (${why})…`);
  // Reverse start order: the dashboard before the database it reads.
  for (const part of [...parts].reverse()) await part.stop();
  // Last: everything above drained into it. It logs whether it stopped or still serves others.
  // The parts have just exited: their connections' backends get a moment to end.
  if (db?.startedHere) await db.stop({ graceMs: 5_000 }).catch((err: unknown) => say(`embedded PostgreSQL did not stop: ${String(err)}`));
  say("stopped");
  process.exit(code);
}

// SIGINT, SIGTERM, SIGHUP (a closed terminal: the parts run in groups of their own and get no
// SIGHUP), or its launcher's exit (`kill -TERM` to a wrapper that does not pass it on, a SIGKILL
// of npm): each stops the product in order. A closed output (`npm start | tee log` whose reader
// went away) loses the lines, never the stopping sequence (server/lib/stop-signals.ts).
onStopRequest((request) => {
  if (request.forced) {
    // The parts stop themselves once this script is gone (scripts/lib/parent-guard.mjs).
    say("second Ctrl-C: exiting now; the parts stop by themselves");
    process.exit(130);
  }
  void shutdown(0, request.why);
});
/** Each part is started with it: a part stops itself if this script dies without stopping it. */
const GUARD = ["--import", `${pathToFileURL(path.resolve("scripts/lib/parent-guard.mjs")).href}?parent=${process.pid}`];

async function main() {
  const port = env.PORT;
  if (!(await portFree(port))) {
    throw new Error(`port ${port} is already in use; stop what holds it or set PORT, e.g. PORT=3001 npm start`);
  }
  if (!env.DAYTONA_API_URL && !(await portFree(env.EMULATOR_PORT, "127.0.0.1"))) {
    throw new Error(`the emulator's port ${env.EMULATOR_PORT} is already in use; stop what holds it or set EMULATOR_PORT`);
  }

  db = await openDatabase({ env, log: say, adoptLeftover: true });
  say(`database ${describeUrl(db.url)}${db.embedded ? (db.startedHere ? " (embedded, started)" : " (embedded, already running)") : ""}`);
  const result = await migrate(db.url, { log: say });
  say(result.applied.length ? `${result.applied.length} migration(s) applied` : "database schema is up to date");

  await firstOperator(db.url);

  const childVars = { DATABASE_URL: db.url, NEXT_TELEMETRY_DISABLED: "1" };
  await ensureBuild(childVars);
  if (stopping) return;

  if (!env.DAYTONA_API_URL) {
    const emulatorDb = emulatorDatabase(db.url);
    // Restarted when it dies, as Daytona's API comes back after a deploy: meanwhile the
    // controller's breaker holds the runs (§2.8), and the sandboxes' processes go on.
    const emulator = supervise("emulator", () => startService("emulator", process.execPath, [...GUARD, ...tsxArgs("scripts/emulator.ts")], { env: childEnv({ ...childVars, EMULATOR_DATABASE: emulatorDb }) }));
    if (!(await waitForHttp(`${emulatorUrl(env)}/health`, 30_000, () => emulator.service.child.exitCode !== null))) {
      throw new Error(`the provider emulator did not answer on ${emulatorUrl(env)} within 30 s`);
    }
  } else {
    say(`provider: Daytona at ${env.DAYTONA_API_URL}`);
  }
  if (stopping) return;

  // A controller that dies is restarted; the dashboard keeps serving meanwhile (§2.8).
  // Stopped with time to drain: its drain timeout, the 10 s its drain may add, and a margin.
  supervise("controller", () => startService("controller", process.execPath, [...GUARD, ...controllerArgs()], { env: childEnv(childVars), format: prettyLogLine }), {
    stopGraceMs: env.RUNWARDEN_DRAIN_TIMEOUT_MS + 15_000,
  });

  const web = startService(
    "web",
    process.execPath,
    [...GUARD, ...webServerArgs(port, env.HOSTNAME)],
    { env: childEnv({ ...childVars, ...WEB_SERVER_ENV, NODE_ENV: "production" }) },
  );
  watch(web);
  let webDead = false;
  void web.exited.then(() => (webDead = true));

  await firstBootWave(db.url, childVars);

  const url = `http://localhost:${port}`;
  if (await waitForHttp(`http://127.0.0.1:${port}/api/trpc/runs.countByStatus`, 60_000, () => webDead)) {
    say(`Runwarden is running at ${url}  (Ctrl-C stops it)`);
  } else if (!stopping) {
    await shutdown(1, "the dashboard did not answer within 60 s");
  }
}

/** On a database with nobody in it, a first operator, with a password shown once. */
async function firstOperator(url: string) {
  const client = createDb(url, { max: 1 });
  try {
    const created = await ensureFirstOperator(client);
    if (!created) return;
    say("no one can sign in yet: created a first operator (an admin of every company)");
    say(`  sign in at ${publicUrl()}/sign-in`);
    say(`  email     ${created.email}`);
    say(`  password  ${created.password}   (shown once; add people with: npm run -s runwarden -- user add EMAIL --role ROLE --company ID)`);
  } finally {
    await client.$disconnect();
  }
}

/**
 * On an empty database, a small seeded restart-chaos wave runs in the background, so a
 * new user sees real runs, proofs and a wave on every page within a minute.
 */
async function firstBootWave(url: string, vars: Record<string, string>) {
  if (env.RUNWARDEN_FIRST_BOOT_WAVE === "off") return;
  const client = createDb(url, { max: 1 });
  try {
    const [runs, waves] = await Promise.all([client.run.count(), client.chaosWave.count()]);
    if (runs > 0 || waves > 0) return;
  } finally {
    await client.$disconnect();
  }
  say("empty database: running a small restart-chaos wave in the background (see /waves)");
  const wave = startService(
    "wave",
    process.execPath,
    [...GUARD, ...tsxArgs("scripts/wave.ts")].concat(["--seed", "1", "--tasks", "4", "--kills", "K1,K2", "--faults", "reject,bind", "--concurrency", "2"]),
    { env: childEnv({ ...vars, EMULATOR_URL: emulatorUrl(env) }) },
  );
  // Not watched: the product keeps running whatever the wave's outcome; stopped with it.
  parts.push({ stop: () => stopService(wave) });
}

/** The dashboard: if it dies, the whole product goes down with it, loudly. */
function watch(service: Service) {
  parts.push({ stop: () => stopService(service) });
  void service.exited.then(({ code, signal }) => {
    if (!stopping) void shutdown(1, `${service.name} exited (${signal ?? `code ${code}`})`);
  });
}

/** A part restarted when it dies, with back-off, given up loudly after repeated fast crashes. */
function supervise(name: string, launch: () => Service, options: { stopGraceMs?: number } = {}): Supervisor {
  const supervisor = new Supervisor(
    name,
    launch,
    { backoffMs: env.RUNWARDEN_RESTART_BACKOFF_MS, capMs: 30_000, stableMs: 60_000, maxFastCrashes: env.RUNWARDEN_RESTART_MAX_CRASHES, ...options },
    say,
  );
  parts.push({ stop: () => supervisor.stop() });
  return supervisor;
}

/** The emulator's own database, beside the application's (one per application database). */
function emulatorDatabase(appUrl: string): string {
  return env.EMULATOR_DATABASE !== "runwarden_emulator" ? env.EMULATOR_DATABASE : `${databaseOf(appUrl)}_emulator`;
}

/** Builds when the build is missing or stale; two starts at once build once. */
async function ensureBuild(vars: Record<string, string>) {
  if (buildIsCurrent().current) return;
  fs.mkdirSync(env.RUNWARDEN_DATA_DIR, { recursive: true });
  const release = await acquireFileLock(path.join(env.RUNWARDEN_DATA_DIR, "build.lock"), 15 * 60_000);
  try {
    const build = buildIsCurrent();
    if (build.current) return;
    say(`building the dashboard (${build.reason})…`);
    const code = await runToEnd(process.execPath, [nodeBin("next/dist/bin/next"), "build"], childEnv(vars));
    if (code !== 0) throw new Error(`next build failed with exit code ${code}`);
  } finally {
    await release();
  }
}

main().catch(async (err: unknown) => {
  process.stderr.write(`runwarden: ${err instanceof Error ? err.message : String(err)}\n`);
  await shutdown(1, "start failed");
});
