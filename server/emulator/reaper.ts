import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import type { EmulatorContext } from "./context";
import { SANDBOX_MARKER } from "./sandbox-host";

/**
 * Auto-stop while the emulator is down (docs/daytona.md, "Auto-stop, auto-archive, auto-delete"). Daytona's sandboxes stop after
 * `autoStopInterval` minutes idle whether or not anyone watches; the emulator's sandboxes are
 * processes on this host, so when it stops (npm start's Ctrl-C) it hands its auto-stop to a
 * small detached process: at each started sandbox's deadline it kills that sandbox's processes
 * (found by their marker, as a stop does), then exits. The next emulator ends it at start and
 * takes over (its own sweep then stops the idle sandboxes in its records).
 */

const PLAN = "autostop-reaper.json";
const PID = "autostop-reaper.pid";

/** The reaper's own program: plain Node, no dependencies, given the plan file. */
const REAPER_SOURCE = `
const fs = require("node:fs");
const plan = JSON.parse(fs.readFileSync(process.argv[1], "utf8"));
const kill = (root) => {
  const wanted = plan.marker + "=" + root;
  for (const e of fs.readdirSync("/proc")) {
    if (!/^\\d+$/.test(e) || Number(e) === process.pid) continue;
    try {
      if (fs.readFileSync("/proc/" + e + "/environ", "utf8").split("\\0").includes(wanted)) process.kill(Number(e), "SIGKILL");
    } catch {}
  }
};
for (const s of plan.sandboxes) setTimeout(() => kill(s.root), Math.max(0, s.deadline - Date.now()));
`;

/** Hands the started sandboxes' auto-stop to a detached reaper; none is started when no sandbox has a process. */
export async function handOverAutoStop(ctx: EmulatorContext): Promise<{ sandboxes: number; pid: number | null }> {
  const now = Date.now();
  const rows = (await ctx.store.all(false)).filter((r) => r.state === "started" && r.auto_stop_interval > 0);
  const sandboxes = rows
    .map((r) => ({ root: ctx.hostOf(r).root, deadline: (r.last_activity_at ?? r.updated_at).getTime() + r.auto_stop_interval * ctx.config.autoStopMinuteMs }))
    .filter((s) => fs.existsSync(path.join(s.root, ".has-processes")));
  if (sandboxes.length === 0) return { sandboxes: 0, pid: null };
  const planFile = path.join(ctx.dataDir, PLAN);
  fs.writeFileSync(planFile, JSON.stringify({ marker: SANDBOX_MARKER, sandboxes }));
  const child = spawn(process.execPath, ["-e", REAPER_SOURCE, planFile], {
    detached: true,
    stdio: "ignore",
    // Marked under the data dir (never a sandbox's own root): a test's clean-up of that dir finds it too.
    env: { [SANDBOX_MARKER]: path.join(ctx.dataDir, "autostop-reaper") } as unknown as NodeJS.ProcessEnv,
  });
  child.unref();
  if (child.pid) fs.writeFileSync(path.join(ctx.dataDir, PID), String(child.pid));
  const last = Math.max(...sandboxes.map((s) => s.deadline));
  ctx.log(`emulator: ${sandboxes.length} sandbox(es) will auto-stop while the emulator is down (the last in ${Math.max(0, Math.round((last - now) / 1000))} s)`);
  return { sandboxes: sandboxes.length, pid: child.pid ?? null };
}

/** Ends a reaper an earlier emulator of this data dir left (the emulator's own sweep takes over). */
export function stopReaper(dataDir: string): void {
  const pidFile = path.join(dataDir, PID);
  let pid: number;
  try {
    pid = Number(fs.readFileSync(pidFile, "utf8"));
  } catch {
    return;
  }
  try {
    // Only the reaper: its marker says so (a pid may have been reused since).
    const environ = fs.readFileSync(`/proc/${pid}/environ`, "utf8");
    if (environ.split("\0").includes(`${SANDBOX_MARKER}=${path.join(dataDir, "autostop-reaper")}`)) process.kill(pid, "SIGKILL");
  } catch {
    // gone already
  }
  fs.rmSync(pidFile, { force: true });
}
