/**
 * What an idle open /runs tab costs the database (docs/decisions/0003-cost-at-scale.md: ≤ 0.05 of a core, 50 ms of CPU
 * per second): the CPU its polls take in the PostgreSQL backend that serves them (utime +
 * stime from /proc), in CPU ms per second of the tab's life. Polls are made back to back on one connection and the CPU per poll
 * is scaled by the page's intervals, so 30 s of an idle tab is measured without waiting 30 s.
 * Parallel workers are off on that connection so that all the work is in the one backend.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import { createDb, type Db } from "../../server/db/client";
import { readLiveToken } from "../../server/live";
import { countRuns, failureGroups, listRuns } from "../../server/runs/queries";
import { LIVE_POLL_MS, LIVE_SAFETY_MS, LIVE_TOKEN_INTERVAL_MS } from "../../server/shared/live";
import { unitFigure, type Figure } from "./measure";

const ALL = { all: true } as const;
const TICK_MS = 1000 / Number(execFileSync("getconf", ["CLK_TCK"]).toString().trim());

/** CPU (ms) a process has used: utime + stime, fields 14 and 15 of /proc/<pid>/stat. */
function cpuMs(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
  const after = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(after[11]) + Number(after[12])) * TICK_MS;
}

/** CPU (ms) the backend spends per call of `fn`, over `calls` calls after a warm-up. */
async function cpuPerCall(db: Db, pid: number, calls: number, fn: () => Promise<unknown>): Promise<number> {
  for (let i = 0; i < 3; i++) await fn();
  const before = cpuMs(pid);
  for (let i = 0; i < calls; i++) await fn();
  const spent = cpuMs(pid) - before;
  const [again] = await db.$queryRaw<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`;
  if (again?.pid !== pid) throw new Error("the measured connection changed backend during the measure");
  return spent / calls;
}

export async function idleRunsTab(url: string, size: number, reps: number): Promise<Figure[]> {
  const db = createDb(url, { max: 1 });
  try {
    await db.$executeRawUnsafe("SET max_parallel_workers_per_gather = 0");
    const [row] = await db.$queryRaw<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`;
    const pid = row!.pid;
    // Before: the list's first page, its count and the failure groups, every LIVE_POLL_MS.
    const pageMs = await cpuPerCall(db, pid, Math.max(60, reps * 6), () => Promise.all([listRuns(db, ALL, {}), countRuns(db, ALL, {}), failureGroups(db, ALL, {})]));
    // After: the token every LIVE_TOKEN_INTERVAL_MS, the same queries every LIVE_SAFETY_MS.
    const tokenMs = await cpuPerCall(db, pid, Math.max(1000, reps * 50), () => readLiveToken(db));
    // CPU ms per second of an idle tab: thousandths of a core (the budget, 0.05 core, is 50).
    const before = (pageMs * 1000) / LIVE_POLL_MS;
    const after = (tokenMs * 1000) / LIVE_TOKEN_INTERVAL_MS + (pageMs * 1000) / LIVE_SAFETY_MS;
    const fmt = (ms: number) => ms.toFixed(3);
    const unit = "ms DB CPU/s";
    return [
      unitFigure("idle /runs tab: DB CPU, queries every 4 s", size, before, unit, `${fmt(pageMs)} ms CPU per list + count + groups poll`),
      unitFigure("idle /runs tab: DB CPU, token every 3 s", size, after, unit, `${fmt(tokenMs)} ms CPU per token, the queries every ${LIVE_SAFETY_MS / 1000} s; ${(before / Math.max(after, 1e-9)).toFixed(1)}× less`),
    ];
  } finally {
    await db.$disconnect();
  }
}
