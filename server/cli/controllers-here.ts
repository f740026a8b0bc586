import type { Db } from "../db/client";
import type { PartialIdentity } from "../engine";
import type { Env } from "../env";
import type { Observer } from "../services/observer";
import type { ProcessIdentity } from "../process/identity";
import { LIVE_CONTROLLER_WINDOW_SECONDS } from "../health";
import { withCliDatabase } from "./database";
import type { CliIO } from "./io";

/** A controller of this instance proven to run on this host now: its row, and its process is that row's. */
export interface ControllerHere {
  bootId: string;
  pid: number;
  hostname: string;
  bootedAt: Date;
  lastSeenAt: Date;
  /** The identity its row records (docs/evidence.md), to prove it again right before a signal. */
  record: PartialIdentity;
}

/** A row of this host that is live by its heartbeat but whose process is not proven to be that controller. */
export interface ControllerNotProven {
  bootId: string;
  pid: number;
  /** `exited:pid_recycled`, `exited:pid_gone`, `unknown:unreadable`, … (docs/rules.md §2.4). */
  judged: string;
}

interface Row {
  boot_id: string;
  pid: number;
  started_at: Date;
  start_ticks: bigint | null;
  hostname: string;
  pid_space: string;
  booted_at: Date;
  last_seen_at: Date;
}

/**
 * The controllers of `instanceId` running on this host, found by their `controller_processes`
 * rows — never by a process name, which every installation's controllers share. A row counts
 * when it is this host's (host name and PID-space key equal to `self`'s), not stopped, and
 * heartbeated within the overview's live window (server/health.ts) on the database's clock;
 * and its process is still that controller: `process_exit` (docs/rules.md §2.4) judged by the
 * observer must answer `alive` / `same_process` (the pid exists with the row's kernel start
 * time). A pid now held by another process is `pid_recycled`, and is left alone.
 */
export async function findControllersHere(db: Db, instanceId: string, self: ProcessIdentity, observer: Observer): Promise<{ live: ControllerHere[]; notProven: ControllerNotProven[] }> {
  const rows = await db.$queryRaw<Row[]>`
    SELECT boot_id, pid, started_at, start_ticks, hostname, pid_space, booted_at, last_seen_at
    FROM controller_processes
    WHERE instance_id = ${instanceId} AND hostname = ${self.hostname} AND pid_space = ${self.pidSpace}
      AND stopped_at IS NULL AND last_seen_at > now() - make_interval(secs => ${LIVE_CONTROLLER_WINDOW_SECONDS})
    ORDER BY booted_at, boot_id`;
  const live: ControllerHere[] = [];
  const notProven: ControllerNotProven[] = [];
  for (const r of rows) {
    const record = { bootId: r.boot_id, pid: r.pid, startedAt: r.started_at.toISOString(), startTicks: r.start_ticks === null ? null : Number(r.start_ticks), pidSpace: r.pid_space };
    const judged = judgeRecord(observer, record);
    if (judged === SAME_PROCESS) live.push({ bootId: r.boot_id, pid: r.pid, hostname: r.hostname, bootedAt: r.booted_at, lastSeenAt: r.last_seen_at, record });
    else notProven.push({ bootId: r.boot_id, pid: r.pid, judged });
  }
  return { live, notProven };
}

const SAME_PROCESS = "alive:same_process";

/**
 * `process_exit` on a recorded controller, as `verdict:reason`. Only `alive:same_process` is that
 * controller; `alive:self` (the judging process) is never one to signal.
 */
export function judgeRecord(observer: Observer, record: PartialIdentity): string {
  const verdict = observer.judgeExit(record);
  return `${verdict.verdict}:${verdict.reason ?? "?"}`;
}

/** Whether the recorded controller's process is still that controller, judged now. */
export function isStillThatController(observer: Observer, c: ControllerHere): boolean {
  return judgeRecord(observer, c.record) === SAME_PROCESS;
}

/** What a person reads for a row that is not signalled. */
export function notProvenText(c: ControllerNotProven): string {
  const why: Record<string, string> = {
    "exited:pid_recycled": `pid ${c.pid} now belongs to another process`,
    "exited:pid_gone": `pid ${c.pid} has exited`,
    "unknown:unreadable": `pid ${c.pid} could not be read`,
  };
  return `controller ${c.bootId} (pid ${c.pid}) not signalled: ${why[c.judged] ?? "its process is not proven to be that controller"} (process_exit ${c.judged})`;
}

/**
 * Opens the database (as every CLI command does), resolves this installation's instance id
 * (RUNWARDEN_INSTANCE_ID, else the database's) and finds its controllers on this host. Loaded
 * lazily, so `runwarden decide` still reads no configuration.
 */
export async function withControllersHere(
  io: CliIO,
  fn: (found: Awaited<ReturnType<typeof findControllersHere>> & { instanceId: string; db: Db; env: Env; observer: Observer }) => Promise<void>,
): Promise<void> {
  await withCliDatabase("controller", io, async (db, env) => {
    const [{ instanceIdOf }, { servicesFor }, { currentProcessIdentity }] = await Promise.all([import("../db/installation"), import("../services"), import("../process/identity")]);
    const instanceId = await instanceIdOf(db, env.RUNWARDEN_INSTANCE_ID);
    // The services' observer judges with this process's identity: the same §2.4 judgement a
    // controller makes before it takes over the runs of another controller on its host.
    const { observer } = servicesFor(db, instanceId);
    const found = await findControllersHere(db, instanceId, currentProcessIdentity(), observer);
    await fn({ ...found, instanceId, db, env, observer });
  });
}
