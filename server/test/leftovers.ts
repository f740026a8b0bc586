import fs from "node:fs";
import path from "node:path";

/**
 * What is left of one installation, read by its own marks — its data directory in a process's
 * environment, its PostgreSQL's postmaster.pid — never by a process name another installation
 * shares; read this way by scripts/stop-signals.int.test.ts and scripts/service-recipes.int.test.ts.
 */

/** Every process but its PostgreSQL's whose environment names the data directory, as "pid cmdline". */
export function partsRunning(dataRoot: string): string[] {
  const mark = `RUNWARDEN_DATA_DIR=${dataRoot}`;
  const out: string[] = [];
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      if (!fs.readFileSync(`/proc/${entry}/environ`, "utf8").split("\0").includes(mark)) continue;
      const cmdline = fs.readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0").join(" ");
      if (!/\bpostgres\b/.test(cmdline)) out.push(`${entry} ${cmdline.slice(0, 160)}`);
    } catch {
      // exited meanwhile, or not ours to read
    }
  }
  return out;
}

/** Its embedded PostgreSQL is running: its postmaster.pid names a live process. */
export function postgresRunning(dataRoot: string): boolean {
  const link = path.join(dataRoot, "pg");
  if (!fs.existsSync(link)) return false;
  const pidFile = path.join(fs.realpathSync(link), "postmaster.pid");
  if (!fs.existsSync(pidFile)) return false;
  const pid = Number(fs.readFileSync(pidFile, "utf8").split("\n")[0]);
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
