import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { portFree } from "./lib/processes";
import { childEnv, readEnv } from "../server/env";
import { READINESS_TIMEOUT_MS } from "../server/readiness";
import { partsRunning, postgresRunning } from "../server/test/leftovers";
import { withTestDatabase } from "../server/test/context";
import { crashLines, endInstallation, freePort, productEnv, waitUntil } from "../server/test/product";
import {
  countsAsSuccess,
  dockerSeconds,
  execArgv,
  fencedBlocks,
  parseDockerfile,
  parseUnit,
  timeSpanSeconds,
  unitEnvironment,
  type Unit,
} from "../server/test/service-recipes";

/**
 * The systemd unit and the container recipe in docs/operations.md ("Running under a process
 * manager") are read from the page and done on a real `npm start`, as systemd and Docker would:
 * ExecStart's command in its own session, the health command until it succeeds, then KillSignal
 * to the main process alone (KillMode=mixed; a container's init does the same to its child).
 * Both then kill whatever is left the moment the main process exits, so nothing of the
 * installation may be left by then. Edit the recipes on the page: this test reads the new ones.
 */

const root = path.resolve(import.meta.dirname, "..");
const page = fs.readFileSync(path.join(root, "docs/operations.md"), "utf8");
const blocks = fencedBlocks(page);
const units = blocks.filter((b) => b.lang === "ini").map((b) => ({ text: b.body, unit: parseUnit(b.body) }));
const runs = (u: Unit, script: string[]) => u.all("Service", "ExecStart").some((v) => sameCommand(execArgv(v), ["npm", ...script]));
const startUnit = units.find((u) => runs(u.unit, ["start"]));
const controllerUnit = units.find((u) => runs(u.unit, ["run", "controller"]));
const dockerfile = blocks.find((b) => b.lang === "dockerfile");
const compose = blocks.find((b) => b.lang === "yaml" && /^services:/m.test(b.body));
const dockerRun = blocks.find((b) => b.lang === "sh" && /\bdocker run\b/.test(b.body));
/** The controller's drain is at most this + 10 s; npm start gives it 5 s more (scripts/start.ts). */
const DRAIN_S = readEnv({}).RUNWARDEN_DRAIN_TIMEOUT_MS / 1000;

/** An argv runs `npm <script…>`: npm by any absolute path, nothing else after it. */
function sameCommand(argv: string[], want: string[]): boolean {
  return path.basename(argv[0] ?? "") === want[0] && JSON.stringify(argv.slice(1)) === JSON.stringify(want.slice(1));
}

const t = withTestDatabase();
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

describe("docs/operations.md's service recipes", () => {
  it("say what the tests below do: npm start and npm run controller, SIGTERM to npm alone (which waits for its script), a stop timeout past the drain, health from /api/health; the container the same", () => {
    expect(startUnit, "an ```ini unit whose ExecStart runs npm start").toBeDefined();
    const unit = startUnit!.unit;
    expect(unit.last("Service", "KillMode")).toBe("mixed");
    expect(unit.last("Service", "KillSignal") ?? "SIGTERM").toBe("SIGTERM");
    expect(timeSpanSeconds(unit.last("Service", "TimeoutStopSec")!)).toBeGreaterThan(DRAIN_S + 15);
    expect(["on-failure", "always"]).toContain(unit.last("Service", "Restart"));
    const port = unitEnvironment(unit.all("Service", "Environment")).PORT;
    expect(port).toBeDefined();
    const post = execArgv(unit.last("Service", "ExecStartPost")!);
    expect(path.basename(post[0]!)).toBe("curl");
    expect(post).toContain(`http://127.0.0.1:${port}/api/health`);
    expect(post.some((a) => /^-[a-zA-Z]*f/.test(a)), "curl -f: an HTTP 503 is a failure").toBe(true);
    expect(post).toContain("--retry-connrefused");

    expect(dockerfile, "a ```dockerfile block").toBeDefined();
    const image = parseDockerfile(dockerfile!.body);
    expect(image.cmd).toEqual(["npm", "start"]);
    expect(image.stopSignal ?? "SIGTERM").toBe(unit.last("Service", "KillSignal") ?? "SIGTERM");
    expect(image.healthcheck?.command).toBe(`curl -fsS http://127.0.0.1:${port}/api/health || exit 1`);
    expect(dockerSeconds(image.healthcheck!.options.timeout ?? "30s")).toBeGreaterThan(READINESS_TIMEOUT_MS / 1000);
    const stopTimeout = timeSpanSeconds(unit.last("Service", "TimeoutStopSec")!);
    expect(dockerRun?.body).toMatch(/\s--init\s/);
    expect(Number(/--stop-timeout\s+(\d+)/.exec(dockerRun!.body)?.[1])).toBeGreaterThanOrEqual(stopTimeout);
    expect(compose?.body).toMatch(/^\s+init: true$/m);
    expect(dockerSeconds(/stop_grace_period:\s*(\S+)/.exec(compose!.body)?.[1] ?? "0s")).toBeGreaterThanOrEqual(stopTimeout);

    expect(controllerUnit, "an ```ini unit whose ExecStart runs npm run controller").toBeDefined();
    expect(controllerUnit!.unit.last("Service", "KillMode")).toBe("mixed");
    expect(timeSpanSeconds(controllerUnit!.unit.last("Service", "TimeoutStopSec")!)).toBeGreaterThan(DRAIN_S + 10);

    // KillMode=mixed kills what is left once npm exits: npm must wait for its script, which it
    // does only when the script is its child (`exec`), not a shell's.
    const scripts = (JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8")) as { scripts: Record<string, string> }).scripts;
    const why = "package.json: without `exec`, npm's child is a shell that dies on SIGTERM and npm exits at once";
    expect(scripts.start, why).toMatch(/^exec node /);
    expect(scripts.controller, why).toMatch(/^exec node /);

    // systemd itself reads every line (where it is installed: it warns about what it does not know).
    const analyze = ["/usr/bin/systemd-analyze", "/bin/systemd-analyze"].find((p) => fs.existsSync(p));
    if (analyze) {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rw-units-"));
      cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
      for (const [name, u] of [["runwarden.service", startUnit!], ["runwarden-controller.service", controllerUnit!]] as const) {
        fs.writeFileSync(path.join(dir, name), u.text);
        const verify = spawnSync(analyze, ["verify", path.join(dir, name)], { encoding: "utf8", timeout: 30_000 });
        expect({ name, status: verify.status, said: `${verify.stdout}${verify.stderr}`.trim() }).toEqual({ name, status: 0, said: "" });
      }
    }
  });

  it("npm start under the systemd unit and the container's HEALTHCHECK: healthy once up, then SIGTERM to npm alone stops every part before npm exits, well within TimeoutStopSec, exit counted a success", async () => {
    const unit = startUnit!.unit;
    const dataRoot = fs.mkdtempSync(path.join(os.tmpdir(), "rw-recipes-"));
    fs.chmodSync(dataRoot, 0o755);
    cleanups.push(() => fs.rmSync(dataRoot, { recursive: true, force: true }));

    // The unit's environment, with what is this machine's own in a test: the data dir and ports.
    const fromUnit = unitEnvironment(unit.all("Service", "Environment"));
    expect(Object.keys(fromUnit).sort()).toEqual(["PORT", "RUNWARDEN_DATA_DIR"]);
    const test = await productEnv({ RUNWARDEN_DATA_DIR: dataRoot });
    const base = childEnv({});
    // As systemd starts a service: a small environment of its own, not the test runner's.
    const env: Record<string, string | undefined> = { PATH: base.PATH, HOME: base.HOME, LANG: "C.UTF-8", ...fromUnit, ...test, NEXT_TELEMETRY_DISABLED: "1", FORCE_COLOR: "0" };
    const ours = (argv: string[]) => argv.map((a) => a.replace(`127.0.0.1:${fromUnit.PORT}/`, `127.0.0.1:${test.PORT}/`));

    const [command, ...args] = execArgv(unit.last("Service", "ExecStart")!);
    const t0 = Date.now();
    const main = spawn(fs.existsSync(command!) ? command! : "npm", args, { cwd: root, env: env as NodeJS.ProcessEnv, detached: true, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    for (const s of [main.stdout, main.stderr]) s?.on("data", (c: Buffer) => (output += c.toString("utf8")));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => main.on("exit", (code, signal) => resolve({ code, signal })));
    cleanups.push(() => leftoversKilled(main, dataRoot));

    // ExecStartPost: the unit is started once this succeeds, within TimeoutStartSec.
    const startLimitMs = timeSpanSeconds(unit.last("Service", "TimeoutStartSec") ?? "90") * 1000;
    const post = ours(execArgv(unit.last("Service", "ExecStartPost")!));
    const healthy = await Promise.race([run(post, startLimitMs), exited.then((e) => ({ code: -1, out: `npm start exited first (${JSON.stringify(e)}):\n${output}` }))]);
    expect(healthy, output).toMatchObject({ code: 0 });
    console.info(`npm start under the unit: healthy ${((Date.now() - t0) / 1000).toFixed(1)} s after ExecStart`);

    // Docker's HEALTHCHECK, shell form: /bin/sh -c.
    const check = await run(["/bin/sh", "-c", ours([parseDockerfile(dockerfile!.body).healthcheck!.command])[0]!], 10_000);
    expect(check.code).toBe(0);
    expect(JSON.parse(check.out)).toEqual({ status: "ok", down: [], parts: { database: "up", controller: "up", emulator: "up" } });
    const res = await fetch(`http://127.0.0.1:${test.PORT}/api/health`, { redirect: "manual" });
    expect({ status: res.status, cache: res.headers.get("cache-control") }).toEqual({ status: 200, cache: "no-store" });
    await res.arrayBuffer();

    // `systemctl stop` with KillMode=mixed: KillSignal to the main process alone.
    const stopLimitMs = timeSpanSeconds(unit.last("Service", "TimeoutStopSec")!) * 1000;
    const stopAt = Date.now();
    process.kill(main.pid!, (unit.last("Service", "KillSignal") ?? "SIGTERM") as NodeJS.Signals);
    const exit = await Promise.race([exited, new Promise<null>((r) => setTimeout(() => r(null), stopLimitMs))]);
    const stopMs = Date.now() - stopAt;
    // What systemd would SIGKILL now (KillMode=mixed), and a container's end would take with it.
    const left = { parts: partsRunning(dataRoot), postgres: postgresRunning(dataRoot) };
    console.info(`npm start under the unit: stopped in ${(stopMs / 1000).toFixed(1)} s (TimeoutStopSec ${stopLimitMs / 1000} s), ${JSON.stringify(exit)}`);
    expect(exit, `npm still running at TimeoutStopSec:\n${output}`).not.toBeNull();
    expect(left, output).toEqual({ parts: [], postgres: false });
    expect(countsAsSuccess(exit!, unit.all("Service", "SuccessExitStatus")), JSON.stringify(exit)).toBe(true);
    expect(stopMs).toBeLessThan(stopLimitMs / 2);
    for (const port of [Number(test.PORT), Number(test.EMULATOR_PORT)]) expect(await portFree(port), `port ${port}`).toBe(true);
    expect(output).toContain("runwarden: stopped");
    expect(crashLines(output)).toEqual([]);
  }, 420_000);
  it("npm run controller under its unit: SIGTERM to npm alone drains the controller before npm exits, exit counted a success", async () => {
    const unit = controllerUnit!.unit;
    const dataRoot = fs.mkdtempSync(path.join(os.tmpdir(), "rw-recipes-ctl-"));
    cleanups.push(() => fs.rmSync(dataRoot, { recursive: true, force: true }));
    const fromUnit = unitEnvironment(unit.all("Service", "Environment"));
    expect(Object.keys(fromUnit)).toEqual(["RUNWARDEN_DATA_DIR"]);
    // EnvironmentFile= (controller.env): the database; no provider answers here, which a controller survives (§2.8).
    const envFile = { DATABASE_URL: t.current.url, EMULATOR_URL: `http://127.0.0.1:${await freePort()}` };
    const base = childEnv({});
    const env: Record<string, string | undefined> = { PATH: base.PATH, HOME: base.HOME, LANG: "C.UTF-8", ...fromUnit, ...envFile, RUNWARDEN_DATA_DIR: dataRoot };
    const [command, ...args] = execArgv(unit.last("Service", "ExecStart")!);
    const main = spawn(fs.existsSync(command!) ? command! : "npm", args, { cwd: root, env: env as NodeJS.ProcessEnv, detached: true, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    for (const s of [main.stdout, main.stderr]) s?.on("data", (c: Buffer) => (output += c.toString("utf8")));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => main.on("exit", (code, signal) => resolve({ code, signal })));
    cleanups.push(() => leftoversKilled(main, dataRoot));
    const live = () => t.current.db.controllerProcess.findFirst({ where: { stoppedAt: null, lastSeenAt: { gt: new Date(Date.now() - 5_000) } } });
    await waitUntil(async () => (await live()) !== null || main.exitCode !== null, 60_000, "the controller's heartbeat");
    const row = await live();
    expect(row, output).not.toBeNull();

    const stopLimitMs = timeSpanSeconds(unit.last("Service", "TimeoutStopSec")!) * 1000;
    const stopAt = Date.now();
    process.kill(main.pid!, (unit.last("Service", "KillSignal") ?? "SIGTERM") as NodeJS.Signals);
    const exit = await Promise.race([exited, new Promise<null>((r) => setTimeout(() => r(null), stopLimitMs))]);
    const stopMs = Date.now() - stopAt;
    const left = partsRunning(dataRoot);
    console.info(`npm run controller under its unit: stopped in ${(stopMs / 1000).toFixed(1)} s (TimeoutStopSec ${stopLimitMs / 1000} s), ${JSON.stringify(exit)}`);
    expect(exit, `npm still running at TimeoutStopSec:\n${output}`).not.toBeNull();
    expect(left, output).toEqual([]);
    expect(countsAsSuccess(exit!, unit.all("Service", "SuccessExitStatus")), JSON.stringify(exit)).toBe(true);
    expect(await t.current.db.controllerProcess.findUniqueOrThrow({ where: { bootId: row!.bootId } })).toMatchObject({ stopReason: "drain", stoppedAt: expect.any(Date) });
    expect(crashLines(output)).toEqual([]);
  }, 120_000);
});

/** Runs a health command to its end (or kills it at `timeoutMs`); curl missing, the same URL with fetch. */
async function run(argv: string[], timeoutMs: number): Promise<{ code: number | null; out: string }> {
  const program = argv[0]!;
  if (program.startsWith("/") && !fs.existsSync(program) && path.basename(program) === "curl") return fetchUntil(argv.find((a) => a.startsWith("http"))!, timeoutMs);
  const child = spawn(program, argv.slice(1), { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout.on("data", (c: Buffer) => (out += c.toString("utf8")));
  child.stderr.on("data", (c: Buffer) => (out += c.toString("utf8")));
  const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
  const code = await new Promise<number | null>((resolve) => child.on("exit", (c) => resolve(c)));
  clearTimeout(timer);
  return { code, out };
}

/** What `curl -f --retry` does, for a machine without curl: the URL until it answers 2xx. */
async function fetchUntil(url: string, timeoutMs: number): Promise<{ code: number; out: string }> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(5_000) });
      const out = await res.text();
      if (res.ok) return { code: 0, out };
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 2_000));
  }
  return { code: 22, out: `${url} did not answer 2xx within ${timeoutMs} ms` };
}

/** After the test: what systemd's final SIGKILL would have ended, ended (by pid: only this installation's), and its PostgreSQL stopped. */
async function leftoversKilled(main: ChildProcess, dataRoot: string): Promise<void> {
  if (main.exitCode === null && main.signalCode === null) {
    try {
      process.kill(-main.pid!, "SIGKILL");
    } catch {
      // gone
    }
  }
  for (const line of partsRunning(dataRoot)) {
    try {
      process.kill(Number(line.split(" ")[0]), "SIGKILL");
    } catch {
      // gone
    }
  }
  await endInstallation(dataRoot);
}
