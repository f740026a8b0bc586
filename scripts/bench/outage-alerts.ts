/**
 * `npm run bench -- --outage-alerts [delays]`: the alerts a provider outage with a controller
 * crash in the middle produces, as a webhook receiver sees them (count, order, dedupe keys) —
 * docs/alerts.md. Real parts: PostgreSQL, the emulator in its own process, real controller
 * processes, a real HTTP receiver.
 *
 * Scale 1:10: a 5-minute outage lasts 30 s, the controller is SIGKILLed at 2:30 (15 s) and a new
 * one is started after each of `delays` (as a supervisor's back-off would, or an operator after
 * it gave up) — 1 s is inside the silence window, 10 s past it, 20 s after the provider is back.
 * Thresholds compressed alike: outage paged after 3 s (default 30 s), probes 100 ms to 3 s
 * (1 s to 30 s), recovery back-off 200 ms (2 s). The silence window is 6 s (default 20 s; the
 * heartbeat is every 2 s whatever the scale). Two runs with many short turns keep the controller
 * calling the provider. The outage: every emulator call answers 502.
 */
import crypto from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { newSecret } from "../../server/alerts/sign";
import { FAST_CONTROLLER_ENV, launchController, type ControllerProcessHandle } from "../../server/controller/launch";
import { createDb } from "../../server/db/client";
import { migrate } from "../../server/db/migrate";
import { DEFAULT_TRANSITION_MS } from "../../server/emulator/context";
import { EmulatorAdminClient } from "../../server/emulator/admin-client";
import { submitRun } from "../../server/runs/submit";
import { throwawayDatabases } from "../lib/throwaway-databases";
import { emulatorProcess } from "./emulator";

const say = (line: string) => process.stdout.write(`${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const INSTANCE = "inst-outage-bench";
const OUTAGE_MS = 30_000;
const CRASH_AT_MS = 15_000;
const SETTLE_MS = 15_000;

interface Seen {
  /** Seconds since the outage began, as the receiver got it. */
  t: number;
  id: string;
  type: string;
}

/** A receiver that answers 200 and keeps what came, once per webhook-id. */
async function receiver() {
  const seen: Seen[] = [];
  const ids = new Set<string>();
  let t0 = Date.now();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const id = String(req.headers["webhook-id"] ?? "");
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { type: string };
      if (!ids.has(id)) {
        ids.add(id);
        seen.push({ t: (Date.now() - t0) / 1000, id, type: body.type });
      }
      res.writeHead(200).end("ok");
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    seen,
    start: () => {
      t0 = Date.now();
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

export async function runOutageAlertsBench(o: { delaysMs: number[] }): Promise<void> {
  const dbs = await throwawayDatabases("rwbench_oa");
  const database = (tag: string) => dbs.create(tag);
  say(`outage alerts bench (scale 1:10): outage ${OUTAGE_MS / 1000} s, SIGKILL at ${CRASH_AT_MS / 1000} s, a new controller after ${o.delaysMs.map((d) => `${d / 1000} s`).join(" / ")}`);
  try {
    for (const delay of o.delaysMs) await scenario(database, delay);
  } finally {
    await dbs.dropAll();
    if (dbs.server.startedHere) await dbs.server.stop();
  }
}

async function scenario(database: (tag: string) => Promise<string>, restartAfterMs: number): Promise<void> {
  const appUrl = await database(`app${restartAfterMs}`);
  await migrate(appUrl);
  const emulator = await emulatorProcess(await database(`emu${restartAfterMs}`), DEFAULT_TRANSITION_MS);
  const admin = new EmulatorAdminClient(emulator.url, "emulator-key");
  const db = createDb(appUrl, { max: 4 });
  const hook = await receiver();
  const secret = newSecret();
  const homes = fs.mkdtempSync(path.join(os.tmpdir(), "rw-bench-oa-"));
  const live: ControllerProcessHandle[] = [];
  const controller = async (name: string) => {
    const c = launchController({
      ...FAST_CONTROLLER_ENV,
      DATABASE_URL: appUrl,
      EMULATOR_URL: emulator.url,
      EMULATOR_API_KEY: "emulator-key",
      RUNWARDEN_INSTANCE_ID: INSTANCE,
      RUNWARDEN_CONTROLLER_HOME: path.join(homes, name),
      RUNWARDEN_ALERT_WEBHOOK_URL: hook.url,
      RUNWARDEN_ALERT_WEBHOOK_SECRET: secret,
      RUNWARDEN_ALERT_RETRY_BASE_MS: "100",
      RUNWARDEN_ALERT_RETRY_CAP_MS: "1000",
      RUNWARDEN_OUTAGE_ALERT_MIN_MS: "3000",
      RUNWARDEN_BREAKER_PROBE_MS: "100",
      RUNWARDEN_BREAKER_PROBE_CAP_MS: "3000",
      RUNWARDEN_RECOVERY_BACKOFF_MS: "200",
      RUNWARDEN_EXECUTOR_TIMEOUT_MS: "6000",
      LOG_LEVEL: "warn",
    });
    live.push(c);
    await c.ready;
    return c;
  };
  try {
    const first = await controller("first");
    for (let i = 0; i < 2; i++) {
      await submitRun(db, INSTANCE, { companyId: "co-1", taskId: `oa-${restartAfterMs}-${i}-${crypto.randomUUID().slice(0, 8)}`, agent: "a", provider: "codex", turns: 50, agentCommand: "sleep 0.5" }, { id: "bench", role: "operator" });
    }
    // The runs under way before the provider goes.
    for (const deadline = Date.now() + 60_000; Date.now() < deadline; await sleep(200)) {
      if ((await db.run.count({ where: { instanceId: INSTANCE, turnsDone: { gte: 2 } } })) === 2) break;
    }
    hook.start();
    const began = Date.now();
    await admin.setFault({ fault: { kind: "http_error", status: 502 } });
    await sleep(CRASH_AT_MS);
    first.kill("SIGKILL");
    await first.exited;
    const restartAt = began + CRASH_AT_MS + restartAfterMs;
    const endAt = began + OUTAGE_MS;
    if (restartAt <= endAt) {
      await sleep(restartAt - Date.now());
      await controller("second");
      await sleep(Math.max(0, endAt - Date.now()));
      await admin.clearFaults();
    } else {
      await sleep(Math.max(0, endAt - Date.now()));
      await admin.clearFaults();
      await sleep(restartAt - Date.now());
      await controller("second");
    }
    await sleep(SETTLE_MS);
    const events = await db.alertEvent.findMany({ where: { instanceId: INSTANCE, type: { startsWith: "provider.outage_" } }, orderBy: { createdAt: "asc" } });
    const keyOf = new Map(events.map((e) => [e.id, e.dedupeKey]));
    const seen = hook.seen.filter((s) => s.type.startsWith("provider.outage_"));
    const started = seen.filter((s) => s.type === "provider.outage_started").length;
    const ended = seen.filter((s) => s.type === "provider.outage_ended").length;
    say(`\nnew controller ${restartAfterMs / 1000} s after the SIGKILL (${restartAt <= endAt ? "during the outage" : "after the provider came back"}): ${seen.length} outage alerts received — ${started} started, ${ended} ended`);
    for (const s of seen) say(`  t=${s.t.toFixed(1).padStart(5)} s  ${s.type.padEnd(24)} ${keyOf.get(s.id) ?? "(not in the outbox)"}`);
    if (events.length > seen.length) say(`  (${events.length - seen.length} more in the outbox, not delivered)`);
  } finally {
    for (const c of live) {
      c.kill("SIGKILL");
      await c.exited;
    }
    await hook.close();
    await db.$disconnect();
    await admin.reset().catch(() => {});
    await emulator.close();
    fs.rmSync(homes, { recursive: true, force: true });
  }
}
