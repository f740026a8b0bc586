/**
 * `npm run bench -- --hosts 3 --runs 150` (capacity across hosts: docs/operations.md, "Several controllers on one database"): N runs with real
 * turns on three real controller processes sharing one instance, two of them in PID
 * namespaces of their own (another host: nobody can judge them by their pid, only by their
 * heartbeat's silence), the database over TCP, the emulator in its own process. Once a third
 * of all turns are done, one namespaced controller is SIGKILLed (and not restarted: a host
 * lost) and the other SIGSTOPped until every run it held is taken over, then woken with its
 * stale view of those runs and left running to the end. Every run must succeed without a
 * Retry and each turn run exactly once (the agents' marker lines), or the bench fails.
 * Beside it, the floor: the same N runs on one healthy controller, in the same invocation.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { FAST_CONTROLLER_ENV, launchController, type ControllerProcessHandle } from "../../server/controller/launch";
import { createDb, type Db } from "../../server/db/client";
import { migrate } from "../../server/db/migrate";
import { withDatabase } from "../../server/db/url";
import { DEFAULT_TRANSITION_MS } from "../../server/emulator/context";
import { EXECUTING_RUN_STATUSES } from "../../server/engine";
import { submitRun } from "../../server/runs/submit";
import { markerCommand, readMarkers } from "../../server/waves/markers";
import { emulatorProcess } from "./emulator";
import { throwawayDatabases } from "../lib/throwaway-databases";

const say = (line = "") => process.stdout.write(`${line}\n`);
const INSTANCE = "inst-hosts";
const COMPANY = "co-hosts";
const ACTOR = { id: "bench", role: "operator" as const };
/** The bench's own connections, left out of every controller's count. */
const OBSERVER = "runwarden-bench-hosts";
const TERMINAL = ["succeeded", "failed", "cancelled"] as const;
/** Runs submitted between two short pauses: the controllers' polls share them out. */
const SUBMIT_BATCH = 10;

export interface HostsBenchOptions {
  hosts: number;
  runs: number;
  turns: number;
  /** What each turn's agent command takes (a sleep), before it writes its marker. */
  agentMs: number;
  /** RUNWARDEN_EXECUTOR_TIMEOUT_MS for every controller: heartbeat silence past it is a takeover. */
  silenceMs: number;
  /** Give up (and fail) when the runs are not all terminal after this long, per phase. */
  timeoutMs: number;
  /** Keep the phases' databases (their names are printed) instead of dropping them; a failed bench always keeps them. */
  keep?: boolean;
}

interface Controller {
  label: string;
  handle: ControllerProcessHandle;
  bootId: string;
  pidNamespace: boolean;
}

/** One phase's figures. */
interface PhaseFigures {
  label: string;
  wallMs: number;
  runsPerSec: number;
  /** Per run: claim → finished, minus its agent commands' own time (Σ turn_done.durationMs). */
  overheadMs: number[];
  /** Per run: claim → first session.open (sandbox, runner, session). */
  startupMs: number[];
  /** Per run and turn: first session.open → finished, minus the agent commands' time, over the turns. */
  dispatchMs: number[];
  /** Peak client connections each controller held at once (by application_name). */
  peaks: Array<{ label: string; peak: number }>;
  /** Peak sessions idle in a transaction, and waiting on a lock, per controller. */
  locks: Array<{ label: string; idleTx: number; lockWaits: number }>;
  /** recovery_attempt_failed events: controller and error. */
  failedAttempts: string[];
  /** recovery_started by taker and how it judged the executor. */
  recoveryReasons: Record<string, number>;
  runsPerController: Array<{ label: string; runs: number }>;
  kill: Takeover | null;
  stall: Takeover | null;
  /** Recoveries whose previous executor was one the bench never signalled. */
  healthyTakeovers: number;
  retriesScheduled: number;
  /** The woken controller's "run lost to another controller" lines: its stale writes refused by the fence. */
  staleRefusals: number | null;
  problems: string[];
}

interface Takeover {
  label: string;
  signal: "SIGKILL" | "SIGSTOP";
  /** Runs it executed when the signal landed. */
  held: number;
  /** Ms from the signal to the last of them recovered by another controller (null: not all were). */
  lastMs: number | null;
  firstMs: number | null;
  recovered: number;
  /** Ms from the signal to the last of them with a turn done by another controller (null: not all). */
  resumedMs: number | null;
  /** How the takers judged it (recovery_started.executorWas), counted. */
  reasons: Record<string, number>;
  /** SIGSTOP only: how long it was stopped. */
  stoppedMs?: number;
}

export async function runHostsBench(o: HostsBenchOptions): Promise<boolean> {
  if (o.hosts < 3) throw new Error("--hosts needs at least 3 controllers: one healthy, one SIGKILLed, one SIGSTOPped");
  const dbs = await throwawayDatabases("rwhosts");
  const { server, made } = dbs;
  const database = (tag: string) => dbs.create(tag);
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "rw-hosts-"));
  let emulator: Awaited<ReturnType<typeof emulatorProcess>> | null = null;
  let passed = false;
  try {
    emulator = await emulatorProcess(await database("emu"), DEFAULT_TRANSITION_MS);
    say(`\nhosts bench: ${o.runs} runs × ${o.turns} turns (agent: sleep ${o.agentMs} ms, then its marker line), silence window ${o.silenceMs} ms, concurrency ${o.runs} per controller, load ${loadAvg()}`);
    const floor = await phase(o, { label: "floor", hosts: 1, appUrl: await database("floor"), adminUrl: server.adminUrl, emulatorUrl: emulator.url, dir: path.join(scratch, "floor"), chaos: false });
    const hosts = await phase(o, { label: `${o.hosts} hosts`, hosts: o.hosts, appUrl: await database("hosts"), adminUrl: server.adminUrl, emulatorUrl: emulator.url, dir: path.join(scratch, "hosts"), chaos: true });
    printTable(o, floor, hosts);
    const problems = [...floor.problems.map((p) => `floor: ${p}`), ...hosts.problems.map((p) => `${hosts.label}: ${p}`)];
    if (problems.length) {
      say(`\nFAILED: ${problems.length} invariant(s) violated`);
      for (const p of problems.slice(0, 40)) say(`  ✗ ${p}`);
      if (problems.length > 40) say(`  … and ${problems.length - 40} more`);
      return false;
    }
    passed = true;
    say(`\nPASSED: every run succeeded without a Retry and each turn ran exactly once (marker lines 1..${o.turns} per run), in both phases`);
    return true;
  } finally {
    await emulator?.killAllProcesses().catch(() => 0);
    await emulator?.close();
    if (passed && !o.keep) await dbs.dropAll();
    // A failed bench's record is the evidence to read: its runs, events and proofs stay.
    else say(`\nkept for inspection: ${made.map((n) => withDatabase(server.adminUrl, n).replace(/:[^:@/]+@/, ":***@")).join(", ")} (drop with DROP DATABASE … WITH (FORCE))`);
    await server.stop();
    fs.rmSync(scratch, { recursive: true, force: true });
  }
}

interface PhaseInput {
  label: string;
  hosts: number;
  appUrl: string;
  adminUrl: string;
  emulatorUrl: string;
  dir: string;
  chaos: boolean;
}

async function phase(o: HostsBenchOptions, p: PhaseInput): Promise<PhaseFigures> {
  await migrate(p.appUrl);
  const observerUrl = new URL(p.appUrl);
  observerUrl.searchParams.set("application_name", OBSERVER);
  const db = createDb(observerUrl.toString(), { max: SUBMIT_BATCH });
  const markers = path.join(p.dir, "markers");
  fs.mkdirSync(markers, { recursive: true });
  const controllers: Controller[] = [];
  const sampler = sampleConnections(p.adminUrl, new URL(p.appUrl).pathname.slice(1));
  const problems: string[] = [];
  try {
    say(`\n── ${p.label}: ${p.hosts === 1 ? "one healthy controller, no kills" : `${p.hosts} controllers of one instance, ${p.hosts - 1} in PID namespaces of their own`}`);
    const labels = "ABCDEFGHIJ";
    for (let i = 0; i < p.hosts; i++) {
      const label = labels[i] ?? `#${i + 1}`;
      const home = path.join(p.dir, `home-${label}`);
      fs.mkdirSync(home, { recursive: true });
      const pidNamespace = i > 0;
      const handle = launchController(
        {
          ...FAST_CONTROLLER_ENV,
          DATABASE_URL: p.appUrl,
          EMULATOR_URL: p.emulatorUrl,
          EMULATOR_API_KEY: "emulator-key",
          RUNWARDEN_INSTANCE_ID: INSTANCE,
          RUNWARDEN_CONTROLLER_HOME: home,
          // Every controller can hold every run: the survivors take the lost hosts' runs over at once.
          RUNWARDEN_CONCURRENCY: String(o.runs),
          RUNWARDEN_EXECUTOR_TIMEOUT_MS: String(o.silenceMs),
          // The turn is the agent command alone (no controller-side think time).
          RUNWARDEN_TURN_MS: "0",
          // Many sandboxes start at once on a small machine: slow answers are not what this measures.
          RUNWARDEN_SESSION_OPEN_TIMEOUT_MS: "60000",
          RUNWARDEN_CREATE_TIMEOUT_MS: "60000",
          DAYTONA_TIMEOUT_MS: "120000",
          RUNWARDEN_SETTLE_MS: undefined,
          LOG_LEVEL: "warn",
        },
        { pidNamespace, readyTimeoutMs: 60_000 },
      );
      controllers.push({ label, handle, bootId: "", pidNamespace });
    }
    for (const c of controllers) {
      await c.handle.ready;
      c.bootId = /^controller ready: bootId=(\S+)/.exec(c.handle.output.find((l) => l.startsWith("controller ready:")) ?? "")?.[1] ?? "";
      if (!c.bootId) throw new Error(`controller ${c.label} printed no bootId`);
      say(`   ${c.label}: pid ${c.handle.pid}${c.pidNamespace ? " (PID namespace of its own)" : ""}, boot ${c.bootId}`);
    }
    const byBoot = new Map(controllers.map((c) => [c.bootId, c.label]));

    const t0 = Date.now();
    const command = `sleep ${(o.agentMs / 1000).toFixed(3)} && ${markerCommand(markers)}`;
    // A batch at a time, in parallel: all in flight at once, shared out by the controllers' polls.
    for (let i = 0; i < o.runs; i += SUBMIT_BATCH) {
      await Promise.all(
        Array.from({ length: Math.min(SUBMIT_BATCH, o.runs - i) }, (_, j) =>
          submitRun(db, INSTANCE, { companyId: COMPANY, taskId: `hosts-${i + j}`, agent: "a", provider: "codex", turns: o.turns, agentCommand: command }, ACTOR),
        ),
      );
      await sleep(30);
    }
    say(`   ${o.runs} runs submitted in ${((Date.now() - t0) / 1000).toFixed(1)} s`);

    const totalTurns = o.runs * o.turns;
    const victim = p.chaos ? controllers[1]! : null;
    const stalled = p.chaos ? controllers[2]! : null;
    let kill: { at: number; held: string[] } | null = null;
    let stall: { at: number; held: string[]; wokenAt: number | null } | null = null;
    let lastProgress = 0;
    let doneAt: number | null = null;
    const deadline = t0 + o.timeoutMs;
    for (;;) {
      const counts = await db.run.groupBy({ by: ["status"], where: { instanceId: INSTANCE }, _count: true, _sum: { turnsDone: true } });
      const all = counts.reduce((n, r) => n + r._count, 0);
      const done = counts.filter((r) => (TERMINAL as readonly string[]).includes(r.status)).reduce((n, r) => n + r._count, 0);
      const turns = counts.reduce((n, r) => n + (r._sum.turnsDone ?? 0), 0);
      for (const c of controllers) {
        const ended = c.handle.child.exitCode !== null || c.handle.child.signalCode !== null;
        if (ended && c !== victim && !problems.some((x) => x.startsWith(`controller ${c.label} exited`))) problems.push(`controller ${c.label} exited on its own (${c.handle.child.signalCode ?? c.handle.child.exitCode}): ${c.handle.output.slice(-3).join(" | ")}`);
      }
      if (victim && stalled && !kill && turns * 3 >= totalTurns) {
        victim.handle.kill("SIGKILL");
        const killAt = Date.now();
        stalled.handle.kill("SIGSTOP");
        const stopAt = Date.now();
        kill = { at: killAt, held: await heldBy(db, victim.bootId) };
        stall = { at: stopAt, held: await heldBy(db, stalled.bootId), wokenAt: null };
        say(`   [${secs(killAt - t0)}] SIGKILL ${victim.label} (pid ${victim.handle.pid}, ${kill.held.length} runs in flight; not restarted) and SIGSTOP ${stalled.label} (pid ${stalled.handle.pid}, ${stall.held.length} runs in flight) at ${turns}/${totalTurns} turns`);
      }
      if (stall && stalled && stall.wokenAt === null) {
        // Woken once every run it held is another's (or past a bound: then said, and judged below).
        const taken = await recoveredSince(db, stall.held, stalled.bootId, stall.at);
        const bound = Date.now() - stall.at > o.silenceMs * 4 + 30_000;
        if (taken.size === stall.held.length || bound) {
          stalled.handle.kill("SIGCONT");
          stall.wokenAt = Date.now();
          say(`   [${secs(stall.wokenAt - t0)}] SIGCONT ${stalled.label} after ${secs(stall.wokenAt - stall.at)}: ${taken.size}/${stall.held.length} of its runs taken over${bound && taken.size < stall.held.length ? " (woken at the bound)" : ""}; left running with its stale view`);
        }
      }
      if (Date.now() - lastProgress >= 3000) {
        lastProgress = Date.now();
        const landed = kill ? `kills landed ${1 + (stall?.wokenAt ? 1 : 0)}/2` : p.chaos ? "kills landed 0/2" : "no kills";
        const locks = stall && stall.wokenAt === null ? `; ${await lockLine(db, stalled!, controllers)}` : "";
        say(`   [${secs(Date.now() - t0)}] runs done ${done}/${o.runs}, turns done ${turns}/${totalTurns}, ${landed}, load ${loadAvg()}${locks}`);
      }
      if (all >= o.runs && done === all && (!stall || stall.wokenAt !== null)) {
        doneAt = Date.now();
        break;
      }
      if (Date.now() > deadline) {
        problems.push(`only ${done} of ${all} runs terminal after ${secs(o.timeoutMs)}`);
        break;
      }
      await sleep(250);
    }
    const wallMs = (doneAt ?? Date.now()) - t0;
    say(`   [${secs(wallMs)}] every run terminal`);
    const { peaks, idleTx, lockWaits } = await sampler.stop();
    await stopAll(controllers);

    // ── judge ──
    const runs = await db.run.findMany({ where: { instanceId: INSTANCE }, select: { id: true, taskId: true, status: true, failureCode: true, previousRunId: true, turnsDone: true, finishedAt: true } });
    if (runs.length !== o.runs) problems.push(`${runs.length} runs for ${o.runs} tasks (a Retry or a duplicate run was made)`);
    for (const r of runs) {
      if (r.previousRunId) problems.push(`run ${r.id} (${r.taskId}) is a Retry of ${r.previousRunId}`);
      if (r.status !== "succeeded") problems.push(`run ${r.id} (${r.taskId}) ended ${r.status}${r.failureCode ? ` (${r.failureCode})` : ""}`);
      const lines = readMarkers(markers, r.id);
      const want = Array.from({ length: o.turns }, (_, i) => i + 1);
      if (lines.join(",") !== want.join(",")) problems.push(`run ${r.id} (${r.taskId}) marker lines [${lines.join(",")}], want [${want.join(",")}]`);
    }
    const ids = runs.map((r) => r.id);
    const events = await db.runEvent.findMany({
      where: { runId: { in: ids }, type: { in: ["claimed", "session.open", "turn_done", "recovery_started", "recovery_attempt_failed", "retry_scheduled"] } },
      orderBy: { id: "asc" },
      select: { runId: true, type: true, at: true, bootId: true, data: true },
    });
    const of = new Map<string, typeof events>();
    for (const e of events) of.set(e.runId, [...(of.get(e.runId) ?? []), e]);
    const overheadMs: number[] = [];
    const startupMs: number[] = [];
    const dispatchMs: number[] = [];
    const claimedBy = new Map<string, number>();
    for (const r of runs) {
      const evs = of.get(r.id) ?? [];
      const claimed = evs.find((e) => e.type === "claimed");
      if (claimed?.bootId) claimedBy.set(claimed.bootId, (claimedBy.get(claimed.bootId) ?? 0) + 1);
      const opened = evs.find((e) => e.type === "session.open");
      const agent = evs.filter((e) => e.type === "turn_done").reduce((n, e) => n + ((e.data as { durationMs?: number | null } | null)?.durationMs ?? 0), 0);
      if (!r.finishedAt || !claimed || !opened) continue;
      overheadMs.push(r.finishedAt.getTime() - claimed.at.getTime() - agent);
      startupMs.push(opened.at.getTime() - claimed.at.getTime());
      dispatchMs.push((r.finishedAt.getTime() - opened.at.getTime() - agent) / o.turns);
    }
    const recoveries = events.filter((e) => e.type === "recovery_started");
    const signalled = new Set([victim?.bootId, stalled?.bootId].filter(Boolean));
    // A takeover by silence of a run whose executor was never signalled: a healthy controller judged gone.
    const healthyTakeovers = recoveries.filter((e) => {
      if (!String((e.data as { executorWas?: unknown } | null)?.executorWas ?? "").startsWith("silent_for_")) return false;
      const before = (of.get(e.runId) ?? []).filter((x) => x.type === "claimed" || x.type === "recovery_started").filter((x) => x.at <= e.at && x !== e).at(-1);
      return before?.bootId ? !signalled.has(before.bootId) && before.bootId !== e.bootId : false;
    }).length;
    const finished = new Map(runs.filter((r) => r.finishedAt && r.status === "succeeded").map((r) => [r.id, r.finishedAt!.getTime()]));
    const takeover = (label: string, signal: "SIGKILL" | "SIGSTOP", s: { at: number; held: string[] }, bootId: string): Takeover => {
      const first = new Map<string, { at: number; why: string }>();
      for (const e of recoveries) {
        if (!s.held.includes(e.runId) || e.bootId === bootId || e.at.getTime() < s.at - 1000 || first.has(e.runId)) continue;
        first.set(e.runId, { at: e.at.getTime(), why: String((e.data as { executorWas?: unknown } | null)?.executorWas ?? "?").replace(/^silent_for_\d+s$/, "silent_for_Ns") });
      }
      const reasons: Record<string, number> = {};
      for (const f of first.values()) reasons[f.why] = (reasons[f.why] ?? 0) + 1;
      const ats = [...first.values()].map((f) => f.at - s.at);
      // Its next turn recorded by another controller (or, with every turn already done, its end).
      const resumed = s.held.map((id) => events.find((e) => e.runId === id && e.type === "turn_done" && e.bootId !== bootId && e.at.getTime() >= s.at)?.at.getTime() ?? finished.get(id) ?? null);
      const resumedMs = resumed.length && resumed.every((x) => x !== null) ? Math.max(...resumed.map((x) => x! - s.at)) : null;
      return { label, signal, held: s.held.length, recovered: first.size, resumedMs, firstMs: ats.length ? Math.min(...ats) : null, lastMs: ats.length === s.held.length && ats.length ? Math.max(...ats) : null, reasons };
    };
    const killT = victim && kill ? takeover(victim.label, "SIGKILL", kill, victim.bootId) : null;
    const stallT = stalled && stall ? { ...takeover(stalled.label, "SIGSTOP", stall, stalled.bootId), stoppedMs: (stall.wokenAt ?? Date.now()) - stall.at } : null;
    if (p.chaos && !kill) problems.push("the kill never fired (a third of the turns were never done)");
    if (killT && killT.held === 0) problems.push(`the SIGKILLed controller ${killT.label} held no run when it was killed: nothing was tested`);
    if (stallT && stallT.held === 0) problems.push(`the SIGSTOPped controller ${stallT.label} held no run when it was stopped: nothing was tested`);
    if (killT && killT.recovered < killT.held) problems.push(`${killT.held - killT.recovered} of the SIGKILLed controller's ${killT.held} runs were never recovered by another controller`);
    if (stallT && stallT.recovered < stallT.held) problems.push(`${stallT.held - stallT.recovered} of the SIGSTOPped controller's ${stallT.held} runs were not taken over while it was stopped`);
    return {
      label: p.label,
      wallMs,
      runsPerSec: o.runs / (wallMs / 1000),
      overheadMs,
      startupMs,
      dispatchMs,
      peaks: controllers.map((c) => ({ label: c.label, peak: peaks.get(`runwarden-controller ${c.bootId}`) ?? 0 })),
      locks: controllers.map((c) => ({ label: c.label, idleTx: idleTx.get(`runwarden-controller ${c.bootId}`) ?? 0, lockWaits: lockWaits.get(`runwarden-controller ${c.bootId}`) ?? 0 })),
      failedAttempts: events.filter((e) => e.type === "recovery_attempt_failed").map((e) => `${byBoot.get(e.bootId ?? "") ?? "?"}: ${String((e.data as { error?: unknown } | null)?.error ?? "?").slice(0, 160)}`),
      recoveryReasons: countBy(recoveries.map((e) => `${byBoot.get(e.bootId ?? "") ?? "?"} ${String((e.data as { executorWas?: unknown } | null)?.executorWas ?? "?").replace(/^silent_for_\d+s$/, "silent_for_Ns")}`)),
      runsPerController: controllers.map((c) => ({ label: c.label, runs: claimedBy.get(c.bootId) ?? 0 })),
      kill: killT,
      stall: stallT,
      healthyTakeovers,
      retriesScheduled: events.filter((e) => e.type === "retry_scheduled").length,
      staleRefusals: stalled ? stalled.handle.output.filter((l) => l.includes("run lost to another controller")).length : null,
      problems: [...problems, ...(byBoot.size !== controllers.length ? ["two controllers share a bootId"] : [])],
    };
  } finally {
    await sampler.stop().catch(() => null);
    await stopAll(controllers);
    await db.$disconnect();
  }
}

/** While one is stopped: its sessions idle in a transaction, and the others' backends waiting on a lock. */
async function lockLine(db: Db, stalled: Controller, controllers: Controller[]): Promise<string> {
  const rows = await db.$queryRaw<Array<{ name: string; idle_tx: number; lock_waits: number }>>`
    SELECT application_name AS name,
      count(*) FILTER (WHERE state = 'idle in transaction')::int AS idle_tx,
      count(*) FILTER (WHERE wait_event_type = 'Lock')::int AS lock_waits
    FROM pg_stat_activity WHERE backend_type = 'client backend' AND application_name LIKE 'runwarden-controller %' GROUP BY 1`;
  const of = (c: Controller) => rows.find((r) => r.name === `runwarden-controller ${c.bootId}`);
  const others = controllers.filter((c) => c !== stalled).map((c) => `${c.label} ${of(c)?.lock_waits ?? 0}`).join(", ");
  return `${stalled.label} idle in a transaction: ${of(stalled)?.idle_tx ?? 0}; waiting on a lock: ${others}`;
}

/** Runs a controller executes now. */
async function heldBy(db: Db, bootId: string): Promise<string[]> {
  const rows = await db.run.findMany({ where: { instanceId: INSTANCE, executorBootId: bootId, status: { in: [...EXECUTING_RUN_STATUSES] } }, select: { id: true } });
  return rows.map((r) => r.id);
}

/** Of `runIds`, those another controller has begun to recover since `since`. */
async function recoveredSince(db: Db, runIds: string[], bootId: string, since: number): Promise<Set<string>> {
  if (runIds.length === 0) return new Set();
  const rows = await db.runEvent.findMany({ where: { runId: { in: runIds }, type: "recovery_started", bootId: { not: bootId }, at: { gte: new Date(since - 1000) } }, select: { runId: true } });
  return new Set(rows.map((r) => r.runId));
}

/** SIGCONT (a stopped one), SIGTERM (a drain), then SIGKILL after a bound. */
async function stopAll(controllers: Controller[]): Promise<void> {
  await Promise.all(
    controllers.map(async (c) => {
      if (c.handle.child.exitCode !== null || c.handle.child.signalCode !== null) return;
      c.handle.kill("SIGCONT");
      c.handle.kill("SIGTERM");
      const bounded = await Promise.race([c.handle.exited.then(() => true), sleep(30_000).then(() => false)]);
      if (!bounded) {
        c.handle.kill("SIGKILL");
        await c.handle.exited;
      }
    }),
  );
}

/** Peak client connections per application_name on the database, sampled until stopped. */
function sampleConnections(adminUrl: string, datname: string) {
  const client = new pg.Client({ connectionString: adminUrl });
  client.on("error", () => {});
  const peaks = new Map<string, number>();
  const idleTx = new Map<string, number>();
  const lockWaits = new Map<string, number>();
  let stopped = false;
  const done = (async () => {
    await client.connect();
    while (!stopped) {
      const { rows } = await client.query<{ name: string; n: number; idle_tx: number; lock_waits: number }>(
        // Client backends only: an autovacuum worker has no application name. Beside the count:
        // sessions idle inside a transaction (a stopped process's locks stay held) and those
        // waiting on a lock (another's).
        `SELECT application_name AS name, count(*)::int AS n,
           count(*) FILTER (WHERE state = 'idle in transaction')::int AS idle_tx,
           count(*) FILTER (WHERE wait_event_type = 'Lock')::int AS lock_waits
         FROM pg_stat_activity WHERE datname = $1 AND backend_type = 'client backend' AND application_name LIKE 'runwarden-controller %' GROUP BY 1`,
        [datname],
      );
      for (const r of rows) {
        peaks.set(r.name, Math.max(peaks.get(r.name) ?? 0, r.n));
        idleTx.set(r.name, Math.max(idleTx.get(r.name) ?? 0, r.idle_tx));
        lockWaits.set(r.name, Math.max(lockWaits.get(r.name) ?? 0, r.lock_waits));
      }
      await sleep(100);
    }
    await client.end();
  })();
  let result: Promise<{ peaks: Map<string, number>; idleTx: Map<string, number>; lockWaits: Map<string, number> }> | null = null;
  return {
    stop() {
      stopped = true;
      result ??= done.then(() => ({ peaks, idleTx, lockWaits }));
      return result;
    },
  };
}

function printTable(o: HostsBenchOptions, floor: PhaseFigures, hosts: PhaseFigures) {
  const ratio = (a: number, b: number) => (b > 0 ? `×${(a / b).toFixed(2)}` : "—");
  const q = (xs: number[], p: number) => {
    if (xs.length === 0) return NaN;
    const s = [...xs].sort((a, b) => a - b);
    return s[Math.min(s.length - 1, Math.floor(p * s.length))]!;
  };
  const ms = (x: number) => (Number.isNaN(x) ? "—" : `${Math.round(x)} ms`);
  const rows: Array<[string, string, string, string]> = [
    ["runs/s (N ÷ first submit → every run terminal)", floor.runsPerSec.toFixed(2), hosts.runsPerSec.toFixed(2), ratio(hosts.runsPerSec, floor.runsPerSec)],
    ["wall time", secs(floor.wallMs), secs(hosts.wallMs), ratio(hosts.wallMs, floor.wallMs)],
    ["run overhead, median (claim → finished − agent time)", ms(q(floor.overheadMs, 0.5)), ms(q(hosts.overheadMs, 0.5)), ratio(q(hosts.overheadMs, 0.5), q(floor.overheadMs, 0.5))],
    ["run overhead, p95", ms(q(floor.overheadMs, 0.95)), ms(q(hosts.overheadMs, 0.95)), ratio(q(hosts.overheadMs, 0.95), q(floor.overheadMs, 0.95))],
    ["startup, median (claim → session.open)", ms(q(floor.startupMs, 0.5)), ms(q(hosts.startupMs, 0.5)), ratio(q(hosts.startupMs, 0.5), q(floor.startupMs, 0.5))],
    ["turn dispatch per turn, median (session.open → finished − agent time, ÷ turns)", ms(q(floor.dispatchMs, 0.5)), ms(q(hosts.dispatchMs, 0.5)), ratio(q(hosts.dispatchMs, 0.5), q(floor.dispatchMs, 0.5))],
    ["turn dispatch per turn, p95", ms(q(floor.dispatchMs, 0.95)), ms(q(hosts.dispatchMs, 0.95)), ratio(q(hosts.dispatchMs, 0.95), q(floor.dispatchMs, 0.95))],
    ["runs claimed per controller", list(floor.runsPerController.map((c) => [c.label, c.runs])), list(hosts.runsPerController.map((c) => [c.label, c.runs])), ""],
    ["peak DB connections per controller", list(floor.peaks.map((c) => [c.label, c.peak])), list(hosts.peaks.map((c) => [c.label, c.peak])), `max ${ratio(Math.max(...hosts.peaks.map((c) => c.peak)), Math.max(...floor.peaks.map((c) => c.peak)))}`],
  ];
  for (const t of [hosts.kill, hosts.stall]) {
    if (!t) continue;
    rows.push([
      `${t.signal} ${t.label} → last of its runs ${t.signal === "SIGKILL" ? "adopted" : "taken over"}`,
      "—",
      `${t.lastMs === null ? "not all" : secs(t.lastMs)} (${t.recovered}/${t.held} runs, first ${t.firstMs === null ? "—" : secs(t.firstMs)})`,
      // The window counts from its last heartbeat (every 2 s), not from the signal.
      `${(t.lastMs ?? 0) > 0 ? `×${((t.lastMs ?? 0) / o.silenceMs).toFixed(2)} the ${secs(o.silenceMs)} window` : ""}`,
    ]);
    rows.push([`   … → last of its runs' next turn done by another`, "", t.resumedMs === null ? "not all" : secs(t.resumedMs), ""]);
    rows.push([`   judged as`, "", Object.entries(t.reasons).map(([k, v]) => `${k} ${v}`).join(", ") || "—", t.stoppedMs !== undefined ? `stopped ${secs(t.stoppedMs)}` : ""]);
  }
  rows.push(["peak sessions idle in a transaction / waiting on a lock", list2(floor.locks), list2(hosts.locks), ""]);
  rows.push(["recoveries (taker, executor judged)", list(Object.entries(floor.recoveryReasons)), list(Object.entries(hosts.recoveryReasons)), ""]);
  rows.push(["recovery attempts that failed", String(floor.failedAttempts.length), String(hosts.failedAttempts.length), ""]);
  rows.push(["recoveries of a controller never signalled", String(floor.healthyTakeovers), String(hosts.healthyTakeovers), ""]);
  rows.push(["retry_scheduled events (provider retries, not Retries)", String(floor.retriesScheduled), String(hosts.retriesScheduled), ""]);
  if (hosts.staleRefusals !== null) rows.push(["woken controller's writes refused (run lost to another controller)", "—", String(hosts.staleRefusals), ""]);
  const w = [Math.max(...rows.map((r) => r[0].length)), Math.max(8, ...rows.map((r) => r[1].length)), Math.max(8, ...rows.map((r) => r[2].length))];
  say(`\n${"".padEnd(w[0]!)}  ${"floor (1)".padEnd(w[1]!)}  ${hosts.label.padEnd(w[2]!)}  ratio`);
  for (const r of rows) say(`${r[0].padEnd(w[0]!)}  ${r[1].padEnd(w[1]!)}  ${r[2].padEnd(w[2]!)}  ${r[3]}`);
  for (const [label, f] of [["floor", floor], [hosts.label, hosts]] as const) for (const a of [...new Set(f.failedAttempts)].slice(0, 5)) say(`   ${label} failed attempt: ${a}`);
  say(`(load ${loadAvg()}; ${os.cpus().length} cores; agent time is the runner's own record of each command, turn_done.durationMs)`);
}

function list2(xs: Array<{ label: string; idleTx: number; lockWaits: number }>): string {
  return xs.map((x) => `${x.label} ${x.idleTx}/${x.lockWaits}`).join(", ");
}

function countBy(xs: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const x of xs) out[x] = (out[x] ?? 0) + 1;
  return out;
}

function list(xs: Array<[string, number]>): string {
  return xs.map(([k, v]) => `${k} ${v}`).join(", ");
}

function secs(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

function loadAvg(): string {
  return os.loadavg().map((x) => x.toFixed(2)).join(" ");
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
