import { spawn, type ChildProcessByStdio } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Readable, Writable } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";

/**
 * Real processes, real signals: a child installs `onStopRequest`, prints each request as a JSON
 * line, and writes a line to its output every 20 ms (so a closed output is noticed at once).
 */
const lib = path.resolve(import.meta.dirname, "stop-signals.ts");
const CHILD = `
import(${JSON.stringify(lib)}).then((m) => {
  m.onStopRequest((r) => process.stderr.write(JSON.stringify(r) + "\\n"), { launcherPollMs: 50 });
  setInterval(() => process.stdout.write("tick\\n"), 20);
  process.stderr.write("ready\\n");
});`;

type Child = ChildProcessByStdio<Writable | null, Readable, Readable>;
const started: Child[] = [];
afterEach(() => {
  for (const c of started.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
});

function child(): { proc: Child; requests: Array<{ reason: string; count: number; forced: boolean }>; ready: Promise<void> } {
  const proc = spawn(process.execPath, ["--import", "tsx", "-e", CHILD], { stdio: ["ignore", "pipe", "pipe"] });
  started.push(proc);
  const requests: Array<{ reason: string; count: number; forced: boolean }> = [];
  let buffered = "";
  const ready = new Promise<void>((resolve) => {
    proc.stderr.on("data", (d: Buffer) => {
      buffered += d.toString();
      const lines = buffered.split("\n");
      buffered = lines.pop() ?? "";
      for (const line of lines) {
        if (line === "ready") resolve();
        else if (line.startsWith("{")) requests.push(JSON.parse(line) as { reason: string; count: number; forced: boolean });
      }
    });
  });
  return { proc, requests, ready };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("onStopRequest", () => {
  it("takes a Ctrl-C relayed by npm (the same signal twice at once) as one request, and a later one as the second", async () => {
    const c = child();
    await c.ready;
    c.proc.kill("SIGINT");
    c.proc.kill("SIGINT");
    await sleep(300);
    expect(c.requests).toEqual([{ reason: "SIGINT", why: "SIGINT", count: 1, forced: false }]);
    await sleep(1_000);
    c.proc.kill("SIGTERM");
    await sleep(1_100);
    c.proc.kill("SIGINT");
    await sleep(300);
    // A repeated SIGTERM (a process manager, a launcher signalling group and part) never forces; a second Ctrl-C does.
    expect(c.requests.map((r) => [r.reason, r.count, r.forced])).toEqual([
      ["SIGINT", 1, false],
      ["SIGTERM", 2, false],
      ["SIGINT", 3, true],
    ]);
  }, 20_000);

  it("takes SIGHUP (a closed terminal) as a request to stop, not a death", async () => {
    const c = child();
    await c.ready;
    c.proc.kill("SIGHUP");
    await sleep(300);
    expect(c.requests.map((r) => r.reason)).toEqual(["SIGHUP"]);
    expect(c.proc.exitCode).toBeNull();
  }, 20_000);

  it("keeps running when its output's reader went away (EPIPE)", async () => {
    const c = child();
    await c.ready;
    c.proc.stdout.destroy();
    await sleep(500);
    expect({ exit: c.proc.exitCode, signal: c.proc.signalCode }).toEqual({ exit: null, signal: null });
  }, 20_000);

  it("asks to stop when its launcher dies, however it died", async () => {
    // A launcher (a shell) that starts the child in the background, says its pid, and waits; SIGKILLed.
    const script = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "rw-stop-")), "child.mjs");
    fs.writeFileSync(script, CHILD);
    const launcher = spawn("sh", ["-c", 'node --import tsx "$0" & echo $!; wait', script], { stdio: ["ignore", "pipe", "pipe"] });
    const pid = await new Promise<number>((resolve) => launcher.stdout.once("data", (d: Buffer) => resolve(Number(d.toString().trim()))));
    let err = "";
    launcher.stderr.on("data", (d: Buffer) => (err += d.toString()));
    while (!err.includes("ready")) await sleep(50);
    launcher.kill("SIGKILL");
    const deadline = Date.now() + 5_000;
    while (!err.includes("launcher exited") && Date.now() < deadline) await sleep(50);
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // gone already
    }
    fs.rmSync(path.dirname(script), { recursive: true, force: true });
    expect(err).toContain(`"reason":"launcher exited"`);
  }, 20_000);
});
