import { spawn } from "node:child_process";
import { readProcessIdentity, type ProcessIdentity } from "./identity";

/** The identity of a real process that has since exited (tests and the bench). */
export async function exitedProcessIdentity(): Promise<ProcessIdentity> {
  const child = spawn(process.execPath, ["-e", "setTimeout(() => {}, 10000)"]);
  await new Promise((r) => setTimeout(r, 300));
  const identity = readProcessIdentity({ pid: child.pid! });
  child.kill("SIGKILL");
  await new Promise((r) => child.once("exit", r));
  return identity;
}
