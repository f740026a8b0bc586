import { spawn } from "node:child_process";
import path from "node:path";
import { describe, expect, it } from "vitest";

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe("startBusyLoops", () => {
  it("ends its loops by itself when its starter is SIGKILLed", async () => {
    // A starter that prints its loops' pids and then waits to be killed.
    const lib = path.resolve(import.meta.dirname, "processes.ts");
    const starter = spawn(process.execPath, ["--import", "tsx", "-e", `import(${JSON.stringify(lib)}).then((m) => { console.log(JSON.stringify(m.startBusyLoops(2).pids)); setInterval(() => {}, 1000); });`], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    const pids = await new Promise<number[]>((resolve) => starter.stdout.once("data", (d: Buffer) => resolve(JSON.parse(d.toString()) as number[])));
    expect(pids).toHaveLength(2);
    expect(pids.every(alive)).toBe(true);
    starter.kill("SIGKILL");
    const deadline = Date.now() + 20_000;
    while (pids.some(alive) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    const left = pids.filter(alive);
    for (const pid of left) process.kill(pid, "SIGKILL");
    expect(left).toEqual([]);
  }, 30_000);
});
