/**
 * `npm run emulator`: the local sandbox provider emulator (Daytona's REST subset, its
 * toolbox API running real processes in per-sandbox directories, fault injection) on loopback. Its sandboxes live in its own database
 * (EMULATOR_DATABASE), so they survive a restart, a SIGKILL included.
 */
import path from "node:path";
import { openEmulatorDatabase, emulatorApiKeys } from "../server/emulator/config";
import { startEmulator, type EmulatorHandle } from "../server/emulator/server";
import { describeUrl } from "../server/db/url";
import { env } from "../server/env";
import { onStopRequest } from "../server/lib/stop-signals";
import type { DatabaseHandle } from "../server/db/embedded";

const say = (line: string) => process.stdout.write(`${line}\n`);
let emulator: EmulatorHandle | null = null;
let db: DatabaseHandle | null = null;
let stopping = false;

async function shutdown(code: number, why: string) {
  if (stopping) return;
  stopping = true;
  say(`emulator: stopping (${why})`);
  // Its sandboxes' processes outlive it, as Daytona's do; their auto-stop must too.
  await emulator?.handOverAutoStop().catch((err: unknown) => say(`emulator: auto-stop could not be handed over: ${String(err)}`));
  await emulator?.close().catch(() => {});
  if (db?.startedHere) await db.stop().catch(() => {});
  process.exit(code);
}
// SIGINT, SIGTERM, SIGHUP or its launcher's exit (server/lib/stop-signals.ts); a second Ctrl-C exits at once.
onStopRequest((request) => (request.forced ? process.exit(130) : void shutdown(0, request.why)));

async function main() {
  db = await openEmulatorDatabase(env, (line) => say(`emulator: ${line}`));
  say(`emulator: database ${describeUrl(db.url)}`);
  try {
    emulator = await startEmulator({
      port: env.EMULATOR_PORT,
      databaseUrl: db.url,
      apiKeys: emulatorApiKeys(env),
      duplicateNames: env.EMULATOR_DUPLICATE_NAMES,
      destroyedRetentionMs: env.EMULATOR_DESTROYED_RETENTION_MS,
      transitionMs: { create: env.EMULATOR_TRANSITION_MS, start: env.EMULATOR_TRANSITION_MS, stop: env.EMULATOR_TRANSITION_MS, destroy: env.EMULATOR_TRANSITION_MS },
      autoStopMinuteMs: env.EMULATOR_AUTO_STOP_MINUTE_MS,
      // Sandboxes are directories here; their detached runners outlive this process.
      dataDir: path.resolve(env.RUNWARDEN_DATA_DIR, "emulator", env.EMULATOR_DATABASE),
      log: say,
      // A 500's cause goes where errors go: the bench, for one, shows the emulator's stderr only.
      logError: (line) => process.stderr.write(`${line}\n`),
    });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EADDRINUSE") {
      throw new Error(`port ${env.EMULATOR_PORT} is already in use; stop what holds it or set EMULATOR_PORT`);
    }
    throw err;
  }
  say(`emulator listening on ${emulator.url}`);
}

main().catch((err: unknown) => {
  process.stderr.write(`emulator: ${(err as Error)?.message ?? String(err)}\n`);
  void shutdown(1, "start failed");
});
