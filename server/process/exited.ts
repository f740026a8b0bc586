import { spawn } from "node:child_process";
import { once } from "node:events";
import { readProcessIdentity, type ProcessIdentity } from "./identity";

/**
 * The identity of a real process that has since exited: a creator that is provably dead
 * (the wave's decoys, the bench's seeded intents, tests). A short-lived child is started,
 * its identity read while it runs, then it is killed and reaped.
 */
export async function exitedProcessIdentity(): Promise<ProcessIdentity> {
  const child = spawn(process.execPath, ["-e", "setTimeout(() => {}, 10000)"], { stdio: "ignore" });
  const exited = once(child, "exit");
  // 'spawn' fires once the child runs (or 'error' rejects): its /proc entry is there to read.
  await once(child, "spawn");
  try {
    return readProcessIdentity({ pid: child.pid! });
  } finally {
    child.kill("SIGKILL");
    await exited;
  }
}
