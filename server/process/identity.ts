import { execFileSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";

/**
 * Controller process identity (docs/rules.md §1) and the pid probe that feeds the engine's
 * `process_exit` proof (§2.4, docs/evidence.md). Read from the real process table: /proc on
 * Linux, `ps` elsewhere.
 */

/** docs/evidence.md's identity shape, plus the host name. */
export interface ProcessIdentity {
  bootId: string;
  pid: number;
  /** ISO-8601, whole-second precision at best (the kernel's boot time is in seconds). */
  startedAt: string;
  /** Kernel start time in clock ticks since boot (Linux); null where only `ps` is available. */
  startTicks: number | null;
  pidSpace: string;
  hostname: string;
}

/** docs/evidence.md's probe shape. */
export interface PidProbe {
  /** False when the process table could not be read at all: the verdict must fail closed. */
  readable: boolean;
  pidLive: boolean;
  /** ISO-8601 start time of the live pid; null when it is gone or its start is unreadable. */
  liveStartedAt: string | null;
  /** The live pid's start in clock ticks since boot (Linux); what decides a reuse (§2.4). */
  liveStartTicks: number | null;
}

export interface ProcSource {
  /** Root of the proc filesystem; tests may point it elsewhere. */
  procRoot: string;
  platform: NodeJS.Platform;
}

const DEFAULT_SOURCE: ProcSource = { procRoot: "/proc", platform: process.platform };

let clockTicks: number | null = null;

/** `getconf CLK_TCK` (the unit of /proc/<pid>/stat's start time), 100 when unavailable. */
export function clockTicksPerSecond(): number {
  if (clockTicks !== null) return clockTicks;
  let ticks = 100;
  try {
    const out = execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8", timeout: 2000, stdio: ["ignore", "pipe", "ignore"] });
    const n = Number.parseInt(out.trim(), 10);
    if (Number.isFinite(n) && n > 0) ticks = n;
  } catch {
    // getconf missing: the Linux default.
  }
  clockTicks = ticks;
  return ticks;
}

/** The kernel's boot time in seconds since the epoch (`btime` in /proc/stat). */
export function linuxBootTime(source: ProcSource = DEFAULT_SOURCE): number {
  const stat = fs.readFileSync(`${source.procRoot}/stat`, "utf8");
  const line = stat.split("\n").find((l) => l.startsWith("btime "));
  const btime = line ? Number.parseInt(line.slice(6).trim(), 10) : Number.NaN;
  if (!Number.isFinite(btime)) throw new Error(`no btime in ${source.procRoot}/stat`);
  return btime;
}

export interface StatFields {
  /** Field 3: R, S, D, Z (zombie), T, X (dead), … */
  state: string;
  /** Field 22: start time in clock ticks after boot. */
  startTicks: number;
}

/** Parses /proc/<pid>/stat. The command name (field 2) may hold spaces and parentheses. */
export function parseStat(text: string): StatFields {
  const close = text.lastIndexOf(")");
  if (close < 0) throw new Error("malformed stat: no command name");
  const rest = text.slice(close + 1).trim().split(/\s+/);
  // rest[0] is field 3 (state); field 22 is rest[19].
  const state = rest[0];
  const startTicks = Number(rest[19]);
  if (!state || !Number.isFinite(startTicks)) throw new Error("malformed stat: missing state or start time");
  return { state, startTicks };
}

function startTimeFromTicks(startTicks: number, bootTime: number): Date {
  return new Date(Math.round((bootTime + startTicks / clockTicksPerSecond()) * 1000));
}

/**
 * Probes a pid on this host. Absent → `{readable: true, pidLive: false}`; a zombie (or a
 * dead task) counts as gone; an unreadable process table → `readable: false`.
 */
export function probePid(pid: number, source: ProcSource = DEFAULT_SOURCE): PidProbe {
  if (!Number.isInteger(pid) || pid <= 0) return { readable: true, pidLive: false, liveStartedAt: null, liveStartTicks: null };
  if (source.platform !== "linux") return probeWithPs(pid);
  let bootTime: number;
  try {
    bootTime = linuxBootTime(source);
    // /proc must show this very process, else it is not the table we think (hidepid, not mounted).
    fs.accessSync(`${source.procRoot}/self/stat`, fs.constants.R_OK);
  } catch {
    return { readable: false, pidLive: false, liveStartedAt: null, liveStartTicks: null };
  }
  let text: string;
  try {
    text = fs.readFileSync(`${source.procRoot}/${pid}/stat`, "utf8");
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    // ESRCH: the task exited between lookup and read.
    if (code === "ENOENT" || code === "ESRCH") return { readable: true, pidLive: false, liveStartedAt: null, liveStartTicks: null };
    return { readable: false, pidLive: false, liveStartedAt: null, liveStartTicks: null };
  }
  let fields: StatFields;
  try {
    fields = parseStat(text);
  } catch {
    return { readable: false, pidLive: false, liveStartedAt: null, liveStartTicks: null };
  }
  if (fields.state === "Z" || fields.state === "X" || fields.state === "x") return { readable: true, pidLive: false, liveStartedAt: null, liveStartTicks: null };
  return { readable: true, pidLive: true, liveStartedAt: startTimeFromTicks(fields.startTicks, bootTime).toISOString(), liveStartTicks: fields.startTicks };
}

/** Portable fallback: `ps -o stat=,lstart= -p <pid>` (macOS, BSD). */
function probeWithPs(pid: number): PidProbe {
  let out: string;
  try {
    out = execFileSync("ps", ["-o", "stat=,lstart=", "-p", String(pid)], {
      encoding: "utf8",
      timeout: 3000,
      stdio: ["ignore", "pipe", "ignore"],
      // A fixed locale so lstart parses; a minimal env keeps the fallback self-contained.
      env: { LC_ALL: "C", PATH: "/bin:/usr/bin:/usr/sbin:/sbin" } as unknown as NodeJS.ProcessEnv,
    });
  } catch (err) {
    // ps exits 1 with no output when the pid does not exist.
    const status = (err as { status?: number }).status;
    const stdout = String((err as { stdout?: unknown }).stdout ?? "");
    if (status === 1 && stdout.trim() === "") return { readable: true, pidLive: false, liveStartedAt: null, liveStartTicks: null };
    return { readable: false, pidLive: false, liveStartedAt: null, liveStartTicks: null };
  }
  const line = out.trim();
  if (!line) return { readable: true, pidLive: false, liveStartedAt: null, liveStartTicks: null };
  const [stat = "", ...start] = line.split(/\s+/);
  if (stat.startsWith("Z")) return { readable: true, pidLive: false, liveStartedAt: null, liveStartTicks: null };
  const started = Date.parse(start.join(" "));
  return { readable: true, pidLive: true, liveStartedAt: Number.isFinite(started) ? new Date(started).toISOString() : null, liveStartTicks: null };
}

/**
 * The PID-space key: two processes may judge each other's pids only when theirs are equal.
 * Linux: sha256(host name, kernel boot id, PID namespace link); elsewhere: host name and boot time.
 */
export function pidSpaceKey(source: ProcSource = DEFAULT_SOURCE): string {
  const hostname = os.hostname();
  let material: string;
  if (source.platform === "linux") {
    let bootId = "";
    let pidNs = "";
    try {
      bootId = fs.readFileSync(`${source.procRoot}/sys/kernel/random/boot_id`, "utf8").trim();
    } catch {
      const btime = safe(() => String(linuxBootTime(source)));
      bootId = btime === "unknown" ? unknowable() : `btime:${btime}`;
    }
    try {
      pidNs = fs.readlinkSync(`${source.procRoot}/self/ns/pid`);
    } catch {
      // Two containers with one host name on one kernel would share a fixed fallback and
      // judge each other's pids: a key only this process has fails closed instead.
      pidNs = unknowable();
    }
    material = ["linux", hostname, bootId, pidNs].join("\n");
  } else {
    material = ["portable", hostname, String(portableBootTime())].join("\n");
  }
  return `ps-${crypto.createHash("sha256").update(material).digest("hex").slice(0, 32)}`;
}

let nonce: string | null = null;
/** Material no other process has: its key equals only its own (foreign to everyone else). */
function unknowable(): string {
  nonce ??= `unknowable:${crypto.randomUUID()}`;
  return nonce;
}

/** Boot time outside Linux: sysctl kern.boottime, else uptime rounded to the minute (jitter-free). */
function portableBootTime(): number {
  try {
    const out = execFileSync("sysctl", ["-n", "kern.boottime"], { encoding: "utf8", timeout: 2000, stdio: ["ignore", "pipe", "ignore"] });
    const m = /sec\s*=\s*(\d+)/.exec(out);
    if (m?.[1]) return Number(m[1]);
  } catch {
    // no sysctl
  }
  return Math.round((Date.now() / 1000 - os.uptime()) / 60) * 60;
}

/**
 * The identity of a process on this host: by default this one. `bootId` is generated
 * once per process for itself; for another pid the caller supplies it (or gets a fresh one).
 */
export function readProcessIdentity(options: { pid?: number; bootId?: string; source?: ProcSource } = {}): ProcessIdentity {
  const source = options.source ?? DEFAULT_SOURCE;
  const pid = options.pid ?? process.pid;
  const own = pid === process.pid;
  const probe = probePid(pid, source);
  let startedAt = probe.liveStartedAt;
  if (!startedAt && own) {
    // No process table: this process's own start is still known to Node.
    startedAt = new Date(Math.round((Date.now() - process.uptime() * 1000) / 1000) * 1000).toISOString();
  }
  if (!probe.pidLive && !own) throw new Error(`process ${pid} is not running`);
  if (!startedAt) throw new Error(`cannot read the start time of process ${pid}`);
  return {
    bootId: options.bootId ?? (own ? ownBootId() : crypto.randomUUID()),
    pid,
    startedAt,
    startTicks: probe.liveStartTicks,
    pidSpace: pidSpaceKey(source),
    hostname: os.hostname(),
  };
}

let cachedBootId: string | null = null;
function ownBootId(): string {
  cachedBootId ??= crypto.randomUUID();
  return cachedBootId;
}

let cachedSelf: ProcessIdentity | null = null;
/** This process's identity, read once (its values cannot change while it runs). */
export function currentProcessIdentity(): ProcessIdentity {
  cachedSelf ??= readProcessIdentity();
  return cachedSelf;
}

function safe(fn: () => string): string {
  try {
    return fn();
  } catch {
    return "unknown";
  }
}
