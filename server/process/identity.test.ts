import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { currentProcessIdentity, parseStat, pidSpaceKey, probePid, readProcessIdentity } from "./identity";

const linux = process.platform === "linux";
const children: ChildProcess[] = [];

function spawnIdle(): Promise<ChildProcess & { pid: number }> {
  const child = spawn(process.execPath, ["-e", "setInterval(()=>{},1000)"], { stdio: "ignore" });
  children.push(child);
  return new Promise((resolve, reject) => {
    child.once("spawn", () => resolve(child as ChildProcess & { pid: number }));
    child.once("error", reject);
  });
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once("exit", () => resolve()));
}

afterEach(async () => {
  for (const child of children.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    await exited(child);
  }
});

describe("process identity", () => {
  it("reads this process: pid, a start time before now, host name and a PID-space key", () => {
    const me = currentProcessIdentity();
    expect(me.pid).toBe(process.pid);
    expect(me.hostname).toBe(os.hostname());
    expect(me.pidSpace).toMatch(/^ps-[0-9a-f]{32}$/);
    expect(me.bootId).toMatch(/^[0-9a-f-]{36}$/);
    const started = Date.parse(me.startedAt);
    // The kernel's clock and Node's agree on when this process started, within a second or two.
    const byNode = Date.now() - process.uptime() * 1000;
    expect(Math.abs(started - byNode)).toBeLessThan(2000);
    expect(started).toBeLessThanOrEqual(Date.now());
    // The same process, read twice: one identity (bootId fixed for the process).
    expect(readProcessIdentity()).toEqual(me);
  });

  it("keeps the PID-space key stable across reads and shares it with a child on this host", async () => {
    expect(pidSpaceKey()).toBe(pidSpaceKey());
    const child = await spawnIdle();
    expect(readProcessIdentity({ pid: child.pid }).pidSpace).toBe(pidSpaceKey());
  });

  it("an unreadable PID namespace gives a key no other process can have, never a shared fallback", async () => {
    // Same host name and kernel boot id, no readable ns/pid link: two containers on one kernel.
    const fake = fs.mkdtempSync(path.join(os.tmpdir(), "rw-proc-nons-"));
    fs.mkdirSync(path.join(fake, "sys/kernel/random"), { recursive: true });
    fs.writeFileSync(path.join(fake, "sys/kernel/random/boot_id"), "0b2c3d4e-0000-4000-8000-000000000001\n");
    const source = { procRoot: fake, platform: "linux" as const };
    const mine = pidSpaceKey(source);
    expect(pidSpaceKey(source)).toBe(mine);
    // Another process reading the same proc tree computes its own key.
    const script = path.join(fake, "key.mts");
    fs.writeFileSync(script, `import { pidSpaceKey } from ${JSON.stringify(path.resolve("server/process/identity.ts"))};\nprocess.stdout.write(pidSpaceKey(${JSON.stringify(source)}));\n`);
    const child = spawn(process.execPath, ["--import", "tsx", script], { stdio: ["ignore", "pipe", "inherit"] });
    children.push(child);
    let out = "";
    child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
    await exited(child);
    expect(out).toMatch(/^ps-[0-9a-f]{32}$/);
    expect(out).not.toBe(mine);
    fs.rmSync(fake, { recursive: true, force: true });
  }, 30_000);

  it("probes a live child as live, with the start time of the identity computed for it", async () => {
    const spawnedAt = Date.now();
    const child = await spawnIdle();
    const identity = readProcessIdentity({ pid: child.pid, bootId: "b-child" });
    const probe = probePid(child.pid);
    expect(probe.readable).toBe(true);
    expect(probe.pidLive).toBe(true);
    expect(probe.liveStartedAt).not.toBeNull();
    expect(Math.abs(Date.parse(probe.liveStartedAt ?? "") - Date.parse(identity.startedAt))).toBeLessThan(1000);
    // And it is close to when we spawned it (the kernel's boot time is whole seconds).
    expect(Math.abs(Date.parse(identity.startedAt) - spawnedAt)).toBeLessThan(2000);
    expect(identity).toMatchObject({ pid: child.pid, bootId: "b-child", hostname: os.hostname() });
    // The kernel's ticks are what identify it (§2.4): the same on every read, unlike btime.
    if (process.platform === "linux") {
      expect(identity.startTicks).toEqual(expect.any(Number));
      expect(probe.liveStartTicks).toBe(identity.startTicks);
      expect(probePid(process.pid).liveStartTicks).not.toBe(identity.startTicks);
    }
  });

  it("probes a killed child as gone (pid_gone input)", async () => {
    const child = await spawnIdle();
    expect(probePid(child.pid).pidLive).toBe(true);
    child.kill("SIGKILL");
    await exited(child);
    expect(probePid(child.pid)).toEqual({ readable: true, pidLive: false, liveStartedAt: null, liveStartTicks: null });
  });

  it("gives a recorded start 2 s off a live pid's start time (pid_recycled input)", async () => {
    const child = await spawnIdle();
    const identity = readProcessIdentity({ pid: child.pid });
    const recorded = new Date(Date.parse(identity.startedAt) - 2000).toISOString();
    const probe = probePid(child.pid);
    expect(probe.pidLive).toBe(true);
    expect(Math.abs(Date.parse(probe.liveStartedAt ?? "") - Date.parse(recorded))).toBeGreaterThanOrEqual(1000);
  });

  it("answers not-live for pids that do not exist or are invalid", () => {
    // Above the kernel's pid_max (at most 2^22 on Linux).
    expect(probePid(4_194_304 + 17)).toEqual({ readable: true, pidLive: false, liveStartedAt: null, liveStartTicks: null });
    expect(probePid(0)).toEqual({ readable: true, pidLive: false, liveStartedAt: null, liveStartTicks: null });
    expect(probePid(-5).pidLive).toBe(false);
  });

  it("counts a zombie as gone", async () => {
    // A child that exits while its parent (a shell) does not reap it.
    const parent = spawn("sh", ["-c", "sleep 0.1 & exec sleep 30"], { stdio: "ignore" });
    children.push(parent);
    await new Promise((r) => parent.once("spawn", r));
    const zombie = await waitFor(() => findZombieChild(parent.pid ?? -1), 5000);
    expect(zombie).not.toBeNull();
    expect(probePid(zombie ?? -1)).toEqual({ readable: true, pidLive: false, liveStartedAt: null, liveStartTicks: null });
  }, 15_000);

  it("reports an unreadable process table as readable: false", () => {
    const fake = fs.mkdtempSync(path.join(os.tmpdir(), "rw-noproc-"));
    try {
      expect(probePid(process.pid, { procRoot: fake, platform: "linux" })).toEqual({ readable: false, pidLive: false, liveStartedAt: null, liveStartTicks: null });
    } finally {
      fs.rmSync(fake, { recursive: true, force: true });
    }
  });

  it("uses the portable fallback off Linux and still finds a live child and a gone one", async () => {
    const child = await spawnIdle();
    const live = probePid(child.pid, { procRoot: "/proc", platform: "darwin" });
    expect(live.readable).toBe(true);
    expect(live.pidLive).toBe(true);
    expect(Math.abs(Date.parse(live.liveStartedAt ?? "") - Date.parse(readProcessIdentity({ pid: child.pid }).startedAt))).toBeLessThan(2000);
    child.kill("SIGKILL");
    await exited(child);
    expect(probePid(child.pid, { procRoot: "/proc", platform: "darwin" }).pidLive).toBe(false);
    expect(pidSpaceKey({ procRoot: "/proc", platform: "darwin" })).toMatch(/^ps-[0-9a-f]{32}$/);
  });
});

describe("parseStat", () => {
  it("reads state and start time even when the command name holds spaces and parentheses", () => {
    const fields = Array.from({ length: 50 }, (_, i) => String(i + 3));
    fields[0] = "S";
    fields[19] = "123456";
    expect(parseStat(`42 (my (weird) cmd) ${fields.join(" ")}`)).toEqual({ state: "S", startTicks: 123456 });
    expect(() => parseStat("garbage")).toThrow(/malformed/);
  });
});

function findZombieChild(parentPid: number): number | null {
  if (!linux) return null;
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, "utf8");
      const rest = stat.slice(stat.lastIndexOf(")") + 1).trim().split(/\s+/);
      if (rest[0] === "Z" && Number(rest[1]) === parentPid) return Number(entry);
    } catch {
      // raced with an exit
    }
  }
  return null;
}

async function waitFor<T>(fn: () => T | null, timeoutMs: number): Promise<T | null> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const v = fn();
    if (v !== null) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
  return null;
}
