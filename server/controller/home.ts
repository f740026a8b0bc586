import fs from "node:fs";
import path from "node:path";

/**
 * The controller's local state: one directory per run it launched a runner for, holding
 * that runner's identity. A restarted controller with the same home can prove from it
 * that the interrupted runner was its own (the "local restart proof", docs/rules.md §2.2 5);
 * a volume-free server (K15: a fresh home) cannot, and must rely on the sandbox's state.
 */
export interface LocalRunnerRoot {
  runId: string;
  runnerInstanceId: string;
  sessionId: string;
  sandboxId: string;
  startedAt: string;
}

function runDir(home: string, instanceId: string, runId: string) {
  return path.join(home, instanceId, "runs", runId);
}

export function writeRunnerRoot(home: string, instanceId: string, root: LocalRunnerRoot): void {
  const dir = runDir(home, instanceId, root.runId);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, "runner.json"), JSON.stringify(root, null, 2));
}

export function readRunnerRoot(home: string, instanceId: string, runId: string): LocalRunnerRoot | null {
  try {
    return JSON.parse(fs.readFileSync(path.join(runDir(home, instanceId, runId), "runner.json"), "utf8")) as LocalRunnerRoot;
  } catch {
    return null;
  }
}

export function removeRunnerRoot(home: string, instanceId: string, runId: string): void {
  fs.rmSync(runDir(home, instanceId, runId), { recursive: true, force: true });
}
