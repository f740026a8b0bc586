/**
 * `npm run bench -- --platform [runs]`: a platform's loop end to end (docs/api.md), as one would
 * run it — an API token; N runs submitted over HTTP by the example client
 * (examples/platform-client.ts), each with its own idempotency key, one of them sent again after
 * its answer was lost; a controller SIGKILLed mid-way; and a webhook receiver that hears every
 * run end (run.succeeded / run.failed / run.cancelled, signatures verified). The platform never
 * polls: it learns each ending from the receiver. Real parts: PostgreSQL, the emulator in its
 * own process, real controller processes, the API's own handler behind a real HTTP server.
 */
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import type { AddressInfo } from "node:net";
import { runwardenClient } from "../../examples/platform-client";
import { parseAllowNetworks } from "../../server/alerts/destinations";
import { createEndpoint } from "../../server/alerts/endpoints";
import { verifySigned } from "../../server/alerts/sign";
import { handleApiRequest } from "../../server/api/handle";
import { FAST_CONTROLLER_ENV, launchController, type ControllerProcessHandle } from "../../server/controller/launch";
import { createDb } from "../../server/db/client";
import { instanceIdOf } from "../../server/db/installation";
import { migrate } from "../../server/db/migrate";
import { DEFAULT_TRANSITION_MS } from "../../server/emulator/context";
import { createApiToken } from "../../server/tokens/create";
import { throwawayDatabases } from "../lib/throwaway-databases";
import { emulatorProcess } from "./emulator";

const say = (line: string) => process.stdout.write(`${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const ADMIN = { id: "bench-admin", role: "admin" };

interface Heard {
  atMs: number;
  type: string;
  runId: string;
  externalId: string | null;
  status: string;
}

/** The platform's webhook receiver: verifies each signature, keeps each webhook-id once, counts repeats. */
async function receiver(secret: () => string, t0: number) {
  const heard: Heard[] = [];
  const ids = new Set<string>();
  let repeats = 0;
  let badSignatures = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)]));
      try {
        verifySigned(secret(), body, headers);
      } catch {
        badSignatures += 1;
        res.writeHead(401).end();
        return;
      }
      const id = headers["webhook-id"] ?? "";
      if (ids.has(id)) repeats += 1;
      else {
        ids.add(id);
        const e = JSON.parse(body) as { type: string; data: { runId?: string; externalId?: string | null; status?: string } };
        if (e.type.startsWith("run.") && e.data.runId) heard.push({ atMs: Date.now() - t0, type: e.type, runId: e.data.runId, externalId: e.data.externalId ?? null, status: e.data.status ?? "" });
      }
      res.writeHead(200).end("ok");
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/runwarden`, heard, counts: () => ({ repeats, badSignatures }), close: () => new Promise<void>((r) => server.close(() => r())) };
}

export async function runPlatformBench(o: { runs: number }): Promise<boolean> {
  const dbs = await throwawayDatabases("rwbench_pf");
  const appUrl = await dbs.create("app");
  await migrate(appUrl);
  const emulator = await emulatorProcess(await dbs.create("emu"), DEFAULT_TRANSITION_MS);
  const db = createDb(appUrl, { max: 12 });
  const homes = fs.mkdtempSync(path.join(os.tmpdir(), "rw-bench-pf-"));
  const live: ControllerProcessHandle[] = [];
  const t0 = Date.now();
  let secret = "";
  const hook = await receiver(() => secret, t0);
  const api = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      const request = new Request(`http://${req.headers.host}${req.url}`, { method: req.method, headers: req.headers as Record<string, string>, ...(body.length ? { body } : {}) });
      void handleApiRequest(request, { db }).then(async (answer) => {
        res.writeHead(answer.status, Object.fromEntries(answer.headers));
        res.end(Buffer.from(await answer.arrayBuffer()));
      });
    });
  });
  await new Promise<void>((r) => api.listen(0, "127.0.0.1", r));
  const baseUrl = `http://127.0.0.1:${(api.address() as AddressInfo).port}`;
  const controller = async (name: string) => {
    // No RUNWARDEN_INSTANCE_ID: the controllers and the API read the one the database keeps.
    const c = launchController({ ...FAST_CONTROLLER_ENV, DATABASE_URL: appUrl, EMULATOR_URL: emulator.url, EMULATOR_API_KEY: "emulator-key", RUNWARDEN_INSTANCE_ID: undefined, RUNWARDEN_CONTROLLER_HOME: path.join(homes, name), RUNWARDEN_ALERT_RETRY_BASE_MS: "100", RUNWARDEN_ALERT_RETRY_CAP_MS: "1000", RUNWARDEN_EXECUTOR_TIMEOUT_MS: "6000", RUNWARDEN_ALERT_ALLOW_NETWORKS: "127.0.0.1", LOG_LEVEL: "warn" });
    live.push(c);
    await c.ready;
    return c;
  };
  try {
    const instanceId = await instanceIdOf(db, undefined);
    // The admin's part: a token for the platform, and an endpoint that hears every run end.
    const { token, summary } = await createApiToken(db, instanceId, ADMIN, { all: true }, { name: "board-platform", role: "operator", companies: ["co-board"], expiresIn: "1d" });
    const allow = parseAllowNetworks("127.0.0.1");
    if (!allow.ok) throw new Error(allow.error);
    const made = await createEndpoint({ db, instanceId, actor: ADMIN, scope: { all: true }, destinations: { allow: allow.networks } }, { name: "board-platform", url: hook.url, events: ["run.succeeded", "run.failed", "run.cancelled"], enabled: true });
    secret = made.secret;
    say(`platform loop: token ${summary.prefix}… (operator, co-board), endpoint subscribed to run.succeeded, run.failed, run.cancelled`);
    const a = await controller("a");
    await controller("b");
    // The platform's part: N runs, each with its own key; the answer to one is lost on the way back, and the client sends it again.
    let lost = false;
    const lossyAt = Math.floor(o.runs / 3);
    const lossy: typeof fetch = async (input, init) => {
      const res = await fetch(input, init);
      const key = new Headers(init?.headers).get("idempotency-key");
      if (!lost && key === `board-run-${lossyAt}`) {
        lost = true;
        throw new DOMException("The operation timed out.", "TimeoutError");
      }
      return res;
    };
    const client = runwardenClient({ baseUrl, token, fetch: lossy });
    const submitMs: number[] = [];
    let replayed = 0;
    const runIds = new Set<string>();
    let killedAt = 0;
    let inFlightAtKill = 0;
    for (let i = 0; i < o.runs; i++) {
      const started = performance.now();
      const r = await client.submitSurely({ companyId: "co-board", taskId: `task-${i}`, agent: "fixer", provider: "codex", turns: 3, agentCommand: "sleep 0.3", externalId: `board-run-${i}` }, `board-run-${i}`);
      submitMs.push(performance.now() - started);
      if (r.replayed) replayed += 1;
      runIds.add(r.run.id);
      if (i === Math.floor(o.runs / 2)) {
        // Mid-way: controller a dies hard with runs in flight.
        inFlightAtKill = await db.run.count({ where: { executorBootId: { not: null }, status: { in: ["starting", "running"] } } });
        a.kill("SIGKILL");
        await a.exited;
        killedAt = Date.now() - t0;
        say(`  controller a SIGKILLed at ${(killedAt / 1000).toFixed(1)} s with ${inFlightAtKill} runs in flight; controller c starts`);
        await controller("c");
      }
    }
    const stored = await db.run.count({ where: { companyId: "co-board" } });
    const ended = async () => (await db.run.groupBy({ by: ["status"], where: { companyId: "co-board" }, _count: { _all: true } })).map((g) => `${g.status} ${g._count._all}`).join(", ");
    const deadline = Date.now() + 2 * 60_000;
    while (new Set(hook.heard.map((h) => h.runId)).size < runIds.size && Date.now() < deadline) await sleep(250);
    const heardRuns = new Set(hook.heard.map((h) => h.runId));
    const perRun = new Map<string, number>();
    for (const h of hook.heard) perRun.set(h.runId, (perRun.get(h.runId) ?? 0) + 1);
    const twice = [...perRun.values()].filter((n) => n > 1).length;
    const byType = hook.heard.reduce<Record<string, number>>((m, h) => ({ ...m, [h.type]: (m[h.type] ?? 0) + 1 }), {});
    const sorted = [...submitMs].sort((x, y) => x - y);
    const pct = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!.toFixed(0);
    const recovered = await db.run.count({ where: { companyId: "co-board", restarts: { gte: 1 } } });
    const { repeats, badSignatures } = hook.counts();
    say(`  submitted: ${o.runs} runs in ${o.runs + 1} POSTs (one answer lost and sent again: replayed ${replayed}), submit p50 ${pct(50)} ms, p95 ${pct(95)} ms`);
    say(`  stored: ${stored} runs for ${o.runs} tasks (${await ended()}); ${recovered} crossed a controller restart`);
    say(`  heard: ${hook.heard.length} run-ended events for ${heardRuns.size} of ${runIds.size} runs (${Object.entries(byType).map(([t, n]) => `${t} ${n}`).join(", ")}); a run heard twice: ${twice}; redelivered webhook-ids: ${repeats}; bad signatures: ${badSignatures}; each with its externalId: ${hook.heard.every((h) => h.externalId?.startsWith("board-run-")) ? "yes" : "no"}`);
    say(`  the last ending heard at ${((hook.heard.at(-1)?.atMs ?? 0) / 1000).toFixed(1)} s; the platform polled 0 times`);
    const ok = stored === o.runs && replayed === 1 && heardRuns.size === o.runs && twice === 0 && badSignatures === 0;
    say(`platform loop: ${ok ? "PASSED" : "FAILED"}`);
    return ok;
  } finally {
    for (const c of live) {
      c.kill("SIGKILL");
      await c.exited;
    }
    await new Promise<void>((r) => api.close(() => r()));
    await hook.close();
    await db.$disconnect();
    await emulator.close();
    fs.rmSync(homes, { recursive: true, force: true });
    await dbs.dropAll();
    if (dbs.server.startedHere) await dbs.server.stop();
  }
}
