import fs from "node:fs";
import path from "node:path";

/**
 * Each turn's side effect, outside the sandbox: the agent command appends the turn's number
 * to a file named by the run, and the count of its lines says how often each turn ran
 * (exactly once: docs/rules.md, "Turns"). The waves' R3 and the hosts bench read them.
 */

/** The agent command: one line with the turn's number, in a file named by the run. */
export function markerCommand(dir: string): string {
  if (dir.includes("'")) throw new Error(`the marker directory ${dir} contains a quote`);
  return `printf '%s\\n' "$RUNWARDEN_TURN" >> '${dir}/'"$RUNWARDEN_RUN_ID"'.turns'`;
}

/** The turn numbers a run's agent wrote, in the order written. */
export function readMarkers(dir: string, runId: string): number[] {
  const file = path.join(dir, `${runId}.turns`);
  if (!fs.existsSync(file)) return [];
  return fs
    .readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => Number(l.trim()));
}
