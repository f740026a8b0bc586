#!/usr/bin/env node
// runnerd: Runwarden's runner inside a sandbox; its contract is docs/runner.md. One file, no dependencies, Node >= 20.
// It is the only writer of runner-state.json (temp file, fsync, rename).
//
//   runnerd start --run R --instance I --session S [--agent-command CMD] [--session-command CMD]
//   runnerd start --resume --run R --instance I --session S   (a dead runner goes on from its own state)
//   runnerd serve …same flags…   (launched detached by `start`; binds its ingress first)
//   runnerd ctl session-open|reattach|turn --seq N [--prompt P] [--timeout-ms MS]|suspend|stop|process|state [--wait-ms MS]
//
// Each agent command runs in its own process group. A turn given a budget (`--timeout-ms`)
// that runs past it has its whole group killed (SIGTERM, then SIGKILL after a short grace)
// and is recorded as processed with `timedOut: true` (exit code 124): a later call for that
// seq, after any restart, answers from the record and never runs it again.
//
// Every `start` and `ctl` prints exactly one line `RUNWARDEN_RESULT {json}`: {ok:true, …} or
// {ok:false, code, message, …}. Exit code 0 when ok, 2 for a refusal, 1 for a crash.
//
// Paths: root `$RUNWARDEN_RUNNER_ROOT` or `~/.runwarden/runner`; work dir `$RUNWARDEN_WORK_DIR`
// or `~/work`; ingress port `--port`, `$RUNWARDEN_INGRESS_PORT`, or 43127.

import { spawn } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";

const RESULT_PREFIX = "RUNWARDEN_RESULT ";
/**
 * The protocol this program speaks (its `ctl` operations, answers and state file; docs/runner.md,
 * "Versions"). Raised only by a change an older controller cannot drive; runner/releases.json
 * records it for every released program (`npm run runner:release`).
 */
const PROTOCOL_VERSION = 1;
const DEFAULT_PORT = 43127;
const OUTPUT_TAIL_BYTES = 4096;
const BIND_CONFLICT_EXIT = 3;
/** The exit code recorded for a turn killed at its budget (timeout(1)'s convention). */
const TIMED_OUT_EXIT = 124;
/** Between the SIGTERM and the SIGKILL of a timed-out turn's process group. */
const KILL_GRACE_MS = 2_000;

const home = process.env.HOME || os.homedir();
const ROOT = process.env.RUNWARDEN_RUNNER_ROOT || path.join(home, ".runwarden", "runner");
// Absolute: the runner reports it in its state, and a restarted controller compares it (§2.1).
const WORK = path.resolve(process.env.RUNWARDEN_WORK_DIR || path.join(home, "work"));
const STATE = path.join(ROOT, "runner-state.json");
const PROVIDER_STATE = path.join(ROOT, "provider-state.json");
const LOCK = path.join(ROOT, ".lock");
const LOG = path.join(ROOT, "runnerd.log");

class Refusal extends Error {
  constructor(code, message, extra = {}) {
    super(message);
    this.code = code;
    this.extra = extra;
  }
}

function parseArgs(argv) {
  const out = { _: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a.startsWith("--")) {
      const key = a.slice(2);
      const next = argv[i + 1];
      if (next === undefined || next.startsWith("--")) out[key] = "true";
      else {
        out[key] = next;
        i++;
      }
    } else out._.push(a);
  }
  return out;
}

function print(result) {
  process.stdout.write(`${RESULT_PREFIX}${JSON.stringify(result)}\n`);
}

// ---- durable state -------------------------------------------------------------------

function readJsonFile(file) {
  let text;
  try {
    text = fs.readFileSync(file, "utf8");
  } catch (err) {
    if (err.code === "ENOENT") return null;
    throw err;
  }
  try {
    return JSON.parse(text);
  } catch {
    return null; // not a runner state: treated as none
  }
}

function readState() {
  const s = readJsonFile(STATE);
  return s && typeof s === "object" && typeof s.runId === "string" ? s : null;
}

/** Atomic replace: temp file in the same directory, fsync, rename, fsync the directory. */
function writeDurable(file, value) {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.tmp-${process.pid}`;
  const fd = fs.openSync(tmp, "w");
  try {
    fs.writeSync(fd, `${JSON.stringify(value, null, 2)}\n`);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(tmp, file);
  try {
    const dfd = fs.openSync(path.dirname(file), "r");
    try {
      fs.fsyncSync(dfd);
    } finally {
      fs.closeSync(dfd);
    }
  } catch {
    // some filesystems refuse a directory fsync; the rename is still atomic
  }
}

function programDigest() {
  return crypto.createHash("sha256").update(fs.readFileSync(new URL(import.meta.url))).digest("hex").slice(0, 16);
}

function writeState(state) {
  state.updatedAt = new Date().toISOString();
  writeDurable(STATE, state);
  return state;
}

// ---- process identity ----------------------------------------------------------------

/** Start time in clock ticks since boot (field 22 of /proc/PID/stat), or null. */
function startTicks(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) may hold spaces and parentheses: split after the last ')'.
    const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (rest[0] === "Z" || rest[0] === "X") return null; // a zombie is not running
    const ticks = Number(rest[19]);
    return Number.isFinite(ticks) ? ticks : null;
  } catch {
    return null;
  }
}

function selfIdentity() {
  return { pid: process.pid, startedAt: new Date(Date.now() - process.uptime() * 1000).toISOString(), startTicks: startTicks(process.pid) };
}

/** Is exactly this process (pid and start ticks) still running? */
function alive(identity) {
  if (!identity || typeof identity.pid !== "number") return false;
  if (fs.existsSync("/proc/self/stat")) {
    const ticks = startTicks(identity.pid);
    if (ticks === null) return false;
    return identity.startTicks == null || identity.startTicks === ticks;
  }
  try {
    process.kill(identity.pid, 0);
    return true;
  } catch {
    return false;
  }
}

function processView(state) {
  if (!state) return { state: "absent" };
  const p = state.process;
  const id = p ? { pid: p.pid, startedAt: p.startedAt, ...(p.startTicks != null ? { startTicks: p.startTicks } : {}) } : {};
  return { state: alive(p) ? "running" : "stopped", ...id };
}

// ---- lock (start and the writes of ctl when no runner is alive) --------------------------

async function withLock(fn) {
  fs.mkdirSync(ROOT, { recursive: true });
  const deadline = Date.now() + 15_000;
  for (;;) {
    try {
      fs.mkdirSync(LOCK);
      fs.writeFileSync(path.join(LOCK, "owner"), JSON.stringify(selfIdentity()));
      break;
    } catch (err) {
      if (err.code !== "EEXIST") throw err;
      const owner = readJsonFile(path.join(LOCK, "owner"));
      // A holder that died leaves the lock behind: take it over.
      if (owner && !alive(owner)) {
        fs.rmSync(LOCK, { recursive: true, force: true });
        continue;
      }
      if (Date.now() > deadline) throw new Refusal("runner_lock_timeout", `another runnerd holds ${LOCK}`);
      await sleep(20);
    }
  }
  try {
    return await fn();
  } finally {
    fs.rmSync(LOCK, { recursive: true, force: true });
  }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function ingressPort(args) {
  const raw = args.port ?? process.env.RUNWARDEN_INGRESS_PORT;
  const n = raw === undefined ? DEFAULT_PORT : Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 65535) throw new Refusal("runner_bad_request", `invalid ingress port ${raw}`);
  return n;
}

function bindConflict(port, detail) {
  return new Refusal("runner_ingress_bind_conflict", `runner ingress: listen tcp 127.0.0.1:${port}: bind: address already in use${detail ? ` (${detail})` : ""}`);
}

function requireIds(args) {
  for (const k of ["run", "instance", "session"]) {
    if (!args[k] || args[k] === "true") throw new Refusal("runner_bad_request", `--${k} is required`);
  }
}

// ---- start ---------------------------------------------------------------------------

async function start(args) {
  requireIds(args);
  const port = ingressPort(args);
  if (args.resume === "true") return resume(args, port);
  return withLock(async () => {
    const current = readState();
    if (current && alive(current.process)) {
      if (current.runId === args.run && current.runnerInstanceId === args.instance && current.sessionId === args.session) {
        return { ok: true, state: current };
      }
      throw bindConflict(current.ingressPort ?? port, `held by runner ${current.runnerInstanceId}, pid ${current.process.pid}`);
    }
    const serveArgs = [process.argv[1], "serve", "--run", args.run, "--instance", args.instance, "--session", args.session, "--port", String(port)];
    for (const k of ["agent-command", "session-command"]) if (args[k] !== undefined) serveArgs.push(`--${k}`, args[k]);
    return launchServe(serveArgs, args, port);
  });
}

/** Lifecycles a controller may reattach to, and so a dead runner may be resumed in (the engine's REATTACHABLE_LIFECYCLES). */
const REATTACHABLE_LIFECYCLES = ["ready", "suspended", "backpressure"];

/**
 * `start --resume` (resume_dead_runner): the runner process died — its sandbox stopped, or it
 * was killed — and the controller's engine proved its state may be gone on from. The new
 * runner keeps that state (session, seq, processed commands: a processed turn is never run
 * again) and only takes over the process identity. Refused here too, whatever the caller
 * proved, when the state is not this run's or a turn was cut short.
 */
async function resume(args, port) {
  return withLock(async () => {
    const current = readState();
    if (!current) throw new Refusal("runner_not_resumable", "there is no runner state to resume");
    if (current.runId !== args.run || current.runnerInstanceId !== args.instance || current.sessionId !== args.session) {
      throw new Refusal("runner_not_resumable", `the state is runner ${current.runnerInstanceId}'s of run ${current.runId}, session ${current.sessionId}`);
    }
    if (alive(current.process)) return { ok: true, state: current };
    if (current.inFlight) throw new Refusal("runner_not_resumable", `turn ${current.inFlight.seq} was in flight when the runner stopped`);
    if (current.lastConnectionProtocolVersion === null || !REATTACHABLE_LIFECYCLES.includes(current.lifecycle)) {
      throw new Refusal("runner_not_resumable", `a runner ${current.lastConnectionProtocolVersion === null ? "that never connected" : `in lifecycle ${current.lifecycle}`} is not resumed`);
    }
    const serveArgs = [process.argv[1], "serve", "--resume", "--run", args.run, "--instance", args.instance, "--session", args.session, "--port", String(port)];
    if (current.agentCommand) serveArgs.push("--agent-command", current.agentCommand);
    return launchServe(serveArgs, args, port);
  });
}

/** Starts `runnerd serve` detached and waits until it wrote its own state. */
async function launchServe(serveArgs, args, port) {
  fs.mkdirSync(ROOT, { recursive: true });
  const log = fs.openSync(LOG, "a");
  // Detached (its own session) with stdio to the log: it outlives this command and the
  // process/execute call that ran it.
  const child = spawn(process.execPath, serveArgs, { detached: true, stdio: ["ignore", log, log], cwd: ROOT, env: process.env });
  fs.closeSync(log);
  let exited = null;
  child.on("exit", (code, signal) => (exited = { code, signal }));
  const deadline = Date.now() + 15_000;
  for (;;) {
    await sleep(15);
    if (exited) {
      if (exited.code === BIND_CONFLICT_EXIT) throw bindConflict(port, null);
      throw new Refusal("runner_start_failed", `runnerd serve exited (${exited.code ?? exited.signal}): ${logTail()}`);
    }
    const s = readState();
    if (s && s.process && s.process.pid === child.pid && s.runnerInstanceId === args.instance) {
      child.unref();
      return { ok: true, state: s };
    }
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Refusal("runner_start_failed", `runnerd serve did not write its state within 15 s: ${logTail()}`);
    }
  }
}

function logTail() {
  try {
    const text = fs.readFileSync(LOG, "utf8");
    return text.slice(-500).trim();
  } catch {
    return "(no log)";
  }
}

// ---- serve ---------------------------------------------------------------------------

async function serve(args) {
  requireIds(args);
  const port = ingressPort(args);
  // Requests before the state is written are refused by the runner's own answer shape.
  let handle = (req, res) => {
    const text = JSON.stringify({ ok: false, code: "runner_starting", message: "the runner is still starting" });
    res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
    res.end(text);
  };
  const server = http.createServer((req, res) => void handle(req, res));
  // The ingress is bound before any state is touched: a second runner never overwrites one.
  await new Promise((resolve) => {
    server.once("error", (err) => {
      process.stderr.write(`runnerd serve: ${err.message}\n`);
      process.exit(err.code === "EADDRINUSE" ? BIND_CONFLICT_EXIT : 1);
    });
    server.listen(port, "127.0.0.1", resolve);
  });

  const previous = readState();
  let state;
  if (args.resume === "true") {
    // Resumed (see `resume`): the dead runner's state goes on; only the process is new.
    if (!previous || previous.runId !== args.run || previous.runnerInstanceId !== args.instance || previous.sessionId !== args.session) {
      process.stderr.write("runnerd serve --resume: the state on disk is not this runner's\n");
      process.exit(1);
    }
    fs.mkdirSync(WORK, { recursive: true });
    state = writeState({ ...previous, process: selfIdentity(), ingressPort: port, workDir: WORK, programDigest: programDigest(), inFlight: null, resumes: (previous.resumes ?? 0) + 1 });
  } else {
    state = freshState(previous, args, port);
  }
  handle = serveWith(state, port, args["session-command"] ?? null);
}

/** A new runner (docs/rules.md §2.2 when an earlier one left its root behind). */
function freshState(previous, args, port) {
  if (previous || fs.existsSync(PROVIDER_STATE)) {
    // Bootstrap restart (docs/rules.md §2.2): the dead runner's root is kept for inspection.
    let n = 1;
    while (fs.existsSync(path.join(ROOT, `.bootstrap-restart-${n}`))) n++;
    const aside = path.join(ROOT, `.bootstrap-restart-${n}`);
    fs.mkdirSync(aside, { recursive: true });
    if (fs.existsSync(STATE)) fs.renameSync(STATE, path.join(aside, "runner-state.json"));
    if (fs.existsSync(PROVIDER_STATE)) fs.renameSync(PROVIDER_STATE, path.join(aside, "provider-state.json"));
  }
  fs.mkdirSync(WORK, { recursive: true });
  return writeState({
    runId: args.run,
    runnerInstanceId: args.instance,
    sessionId: args.session,
    lifecycle: "connecting",
    lastConnectionProtocolVersion: null,
    lastControllerCommandSeq: 0,
    reconnectCount: 0,
    outbox: [],
    processedCommands: [],
    pendingTerminalDelivery: null,
    providerStatePresent: false,
    process: selfIdentity(),
    ingressPort: port,
    workDir: WORK,
    agentCommand: args["agent-command"] ?? null,
    // The program this runner runs (sha-256 of this file, as the controller names its upload):
    // a restarted controller checks it before trusting a staged attachment (docs/rules.md §2.1).
    programDigest: programDigest(),
    inFlight: null,
    updatedAt: "",
  });
}

/** The runner's operations on `initial` (fresh or resumed); returns the request handler. */
function serveWith(initial, port, sessionCommand) {
  let state = initial;

  /** The turn being run, with a promise that settles when it is processed. */
  let running = null;
  /** session.open in progress (its command may hang: never_connect). */
  let opening = null;
  let queue = Promise.resolve();
  const serial = (fn) => {
    const next = queue.then(fn, fn);
    queue = next.catch(() => {});
    return next;
  };

  function agentEnv(extra) {
    return { ...process.env, RUNWARDEN_RUN_ID: state.runId, RUNWARDEN_SESSION_ID: state.sessionId, ...extra };
  }

  /**
   * Runs a shell command in the work dir, in its own process group (detached: a new session
   * whose id is the shell's pid); combined output, bounded tail. With `timeoutMs`, past it the
   * whole group is sent SIGTERM, then SIGKILL after KILL_GRACE_MS, and the result says
   * `timedOut` once the group is gone (or was SIGKILLed).
   */
  function runCommand(command, env, stdin, onChild, timeoutMs) {
    return new Promise((resolve) => {
      const started = Date.now();
      const child = spawn("/bin/sh", ["-c", command], { cwd: WORK, env, stdio: ["pipe", "pipe", "pipe"], detached: true });
      let tail = Buffer.alloc(0);
      const keep = (chunk) => {
        tail = Buffer.concat([tail, chunk]);
        if (tail.length > OUTPUT_TAIL_BYTES * 2) tail = tail.subarray(tail.length - OUTPUT_TAIL_BYTES);
      };
      child.stdout.on("data", keep);
      child.stderr.on("data", keep);
      child.stdin.on("error", () => {});
      child.stdin.end(stdin ?? "");
      onChild?.(child);
      let timedOut = false;
      let killed = false;
      let closed = null;
      let settled = false;
      const timers = [];
      const finish = () => {
        if (settled) return;
        settled = true;
        for (const t of timers) clearTimeout(t);
        const { code, signal } = closed ?? { code: null, signal: "SIGKILL" };
        if (timedOut) keep(Buffer.from(`\nrunnerd: the turn ran past its budget of ${timeoutMs} ms; its process group was killed\n`));
        const text = tail.subarray(Math.max(0, tail.length - OUTPUT_TAIL_BYTES)).toString("utf8");
        const exitCode = timedOut ? TIMED_OUT_EXIT : (code ?? (signal ? 128 : 1));
        resolve({ exitCode, signal: signal ?? null, output: text, durationMs: Date.now() - started, timedOut });
      };
      if (Number(timeoutMs) > 0) {
        timers.push(
          setTimeout(() => {
            timedOut = true;
            signalGroup(child.pid, "SIGTERM");
            timers.push(
              setTimeout(() => {
                killed = true;
                signalGroup(child.pid, "SIGKILL");
                // Recorded once the group is gone; a process that left the group (its own
                // setsid) may hold the pipes open: after a second the record is written anyway.
                const until = Date.now() + 1_000;
                const settle = () => {
                  if ((closed && !groupAlive(child.pid)) || Date.now() > until) {
                    child.stdout.destroy();
                    child.stderr.destroy();
                    finish();
                  } else timers.push(setTimeout(settle, 20));
                };
                settle();
              }, KILL_GRACE_MS),
            );
          }, Number(timeoutMs)),
        );
      }
      child.on("error", (err) => keep(Buffer.from(`runnerd: ${err.message}\n`)));
      child.on("close", (code, signal) => {
        closed = { code, signal };
        // A timed-out turn is recorded once nothing of its group is left (or it was SIGKILLed).
        if (timedOut && (killed || groupAlive(child.pid))) return; // the SIGKILL step records it
        finish();
      });
    });
  }

  const needLifecycle = (ok, code) => {
    if (!ok.includes(state.lifecycle)) throw new Refusal(code, `the runner is ${state.lifecycle}`);
  };

  async function sessionOpen(body) {
    if (state.lifecycle === "ready" && state.providerStatePresent) return { ok: true, state };
    if (state.lifecycle !== "connecting") {
      throw new Refusal("runner_not_connecting", `session.open needs a connecting runner; it is ${state.lifecycle} (reattach instead)`);
    }
    // A new session.open supersedes one whose caller gave up (its command may hang forever).
    if (opening) {
      opening.superseded = true;
      if (opening.child) signalGroup(opening.child.pid, "SIGKILL");
    }
    const attempt = { superseded: false, child: null, promise: null };
    opening = attempt;
    attempt.promise = (async () => {
      const command = body.sessionCommand ?? sessionCommand;
      if (command) {
        const r = await runCommand(command, agentEnv({}), "", (c) => (attempt.child = c));
        if (attempt.superseded) return { ok: false, code: "session_open_superseded", message: "a later session.open replaced this one", definite: false, state };
        if (r.exitCode !== 0) {
          const failure = providerFailureIn(r.output);
          state.lifecycle = failure && failure.kind === "requires_action" ? "unrecoverable" : "recoverable_failure";
          writeState(state);
          if (failure) {
            return { ok: false, code: "session_open_rejected", message: failure.message, definite: true, providerFailure: failure, state };
          }
          return { ok: false, code: "session_command_failed", message: `the session command exited ${r.exitCode}: ${r.output.slice(-300).trim()}`, definite: false, state };
        }
      }
      writeDurable(PROVIDER_STATE, { sessionId: state.sessionId, openedAt: new Date().toISOString() });
      Object.assign(state, { lifecycle: "ready", lastConnectionProtocolVersion: PROTOCOL_VERSION, providerStatePresent: true });
      writeState(state);
      return { ok: true, state };
    })().finally(() => {
      if (opening === attempt) opening = null;
    });
    return waitFor(attempt.promise, body.waitMs, () => ({ ok: false, code: "session_open_pending", message: "session.open has not answered yet", definite: false, state }));
  }

  function reattach() {
    if (state.lastConnectionProtocolVersion === null) throw new Refusal("runner_never_connected", "the runner never connected: open a session instead");
    needLifecycle(REATTACHABLE_LIFECYCLES, "runner_not_reattachable");
    Object.assign(state, { lifecycle: "ready", reconnectCount: state.reconnectCount + 1 });
    return { ok: true, state: writeState(state) };
  }

  function turn(body) {
    const seq = Number(body.seq);
    if (!Number.isInteger(seq) || seq < 1) throw new Refusal("runner_bad_request", "turn needs --seq N (N >= 1)");
    const done = state.processedCommands.find((c) => c.seq === seq);
    // Exactly once: a processed seq answers with its record and never runs again.
    if (done) return { ok: true, state, command: done };
    if (running && running.seq === seq) return waitFor(running.promise, body.waitMs, pendingTurn(seq));
    if (running) throw new Refusal("runner_busy", `turn ${running.seq} is still running`);
    needLifecycle(["ready"], "runner_not_ready");
    if (seq <= state.lastControllerCommandSeq) throw new Refusal("stale_command_seq", `seq ${seq} is not after the last command ${state.lastControllerCommandSeq}`);
    if (!state.agentCommand) throw new Refusal("runner_no_agent_command", "the runner was started without --agent-command");
    // The turn's budget comes with its first call; later calls for the same seq only wait.
    const timeoutMs = Number(body.timeoutMs) > 0 ? Math.floor(Number(body.timeoutMs)) : null;
    state.inFlight = { seq, startedAt: new Date().toISOString(), timeoutMs };
    writeState(state);
    const prompt = typeof body.prompt === "string" ? body.prompt : "";
    const agent = { child: null };
    const promise = runCommand(state.agentCommand, agentEnv({ RUNWARDEN_TURN: String(seq), RUNWARDEN_PROMPT: prompt }), prompt, (c) => (agent.child = c), timeoutMs).then((r) => {
      const command = {
        seq,
        kind: "turn",
        processedAt: new Date().toISOString(),
        exitCode: r.exitCode,
        signal: r.signal,
        durationMs: r.durationMs,
        outputTail: r.output,
        timedOut: r.timedOut,
        timeoutMs,
      };
      state.processedCommands.push(command);
      state.lastControllerCommandSeq = seq;
      state.inFlight = null;
      writeState(state);
      running = null;
      return { ok: true, state, command };
    });
    running = { seq, promise, agent };
    return waitFor(promise, body.waitMs, pendingTurn(seq));
  }

  const pendingTurn = (seq) => () => ({ ok: true, pending: true, state, message: `turn ${seq} is still running` });

  function suspend() {
    if (state.lifecycle === "suspended") return { ok: true, state };
    if (state.lifecycle === "stopped" || state.lifecycle === "revoked") throw new Refusal("runner_not_suspendable", `a ${state.lifecycle} runner cannot be suspended`);
    state.lifecycle = "suspended";
    return { ok: true, state: writeState(state) };
  }

  /** A stopped runner leaves no agent behind: the turn in flight (not processed) loses its group. */
  function killRunningTurn() {
    if (running?.agent.child) signalGroup(running.agent.child.pid, "SIGKILL");
  }

  function stop() {
    killRunningTurn();
    if (state.lifecycle !== "stopped") {
      state.lifecycle = "stopped";
      writeState(state);
    }
    setTimeout(() => process.exit(0), 20);
    return { ok: true, state };
  }

  async function onRequest(req, res) {
    let result;
    try {
      if (req.method !== "POST" || req.url !== "/op") throw new Refusal("runner_bad_request", `no route ${req.method} ${req.url}`);
      const chunks = [];
      for await (const c of req) chunks.push(c);
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}");
      // A ctl of another sandbox (shared host network in the emulator) must not drive this runner.
      if (body.root !== ROOT) throw new Refusal("runner_wrong_root", `this runner serves ${ROOT}, not ${body.root}`);
      result = await serial(async () => {
        switch (body.op) {
          case "session-open":
            return { start: sessionOpen(body) };
          case "reattach":
            return reattach();
          case "turn":
            return { start: turn(body) };
          case "suspend":
            return suspend();
          case "stop":
            return stop();
          default:
            throw new Refusal("runner_bad_request", `unknown operation ${body.op}`);
        }
      });
      // Long waits happen outside the queue, so a stop or suspend is not stuck behind a turn.
      if (result && "start" in result) result = await result.start;
    } catch (err) {
      result = err instanceof Refusal ? { ok: false, code: err.code, message: err.message, ...err.extra } : { ok: false, code: "runner_error", message: String(err?.stack ?? err) };
    }
    const text = JSON.stringify(result);
    res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
    res.end(text);
  }

  process.on("SIGTERM", () => {
    killRunningTurn();
    state.lifecycle = "stopped";
    writeState(state);
    process.exit(0);
  });
  process.stdout.write(`runnerd serve: ${state.runnerInstanceId} on 127.0.0.1:${port}, pid ${process.pid}${state.resumes ? ` (resumed, ${state.resumes})` : ""}\n`);
  return onRequest;
}

function waitFor(promise, waitMs, onTimeout) {
  const ms = Number(waitMs) > 0 ? Number(waitMs) : 20_000;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => resolve(onTimeout()), ms);
    promise.then(
      (v) => {
        clearTimeout(timer);
        resolve(v);
      },
      (e) => {
        clearTimeout(timer);
        reject(e);
      },
    );
  });
}

/** Signals a whole process group (its leader's pid); a group already gone is fine. */
function signalGroup(pgid, signal) {
  if (!pgid) return;
  try {
    process.kill(-pgid, signal);
  } catch {
    // already gone
  }
}

/**
 * Whether any live process of the group is left. Through /proc where there is one: a member
 * that died but was not reaped yet (its new parent, often pid 1, reaps when it gets to it) is
 * gone, not left.
 */
function groupAlive(pgid) {
  if (!pgid) return false;
  try {
    process.kill(-pgid, 0);
  } catch (err) {
    if (err.code !== "EPERM") return false;
  }
  let entries;
  try {
    entries = fs.readdirSync("/proc");
  } catch {
    return true;
  }
  for (const e of entries) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${e}/stat`, "utf8");
      const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      // rest[0] is the state, rest[2] the process group.
      if (Number(rest[2]) === pgid && rest[0] !== "Z" && rest[0] !== "X") return true;
    } catch {
      // gone meanwhile
    }
  }
  return false;
}

/** The documented provider-failure line: a JSON object line with a `providerFailure` {kind, category, message}. */
function providerFailureIn(output) {
  const lines = output.split("\n").map((l) => l.trim()).filter(Boolean).reverse();
  for (const line of lines) {
    if (!line.startsWith("{")) continue;
    try {
      const v = JSON.parse(line);
      const f = v && v.providerFailure;
      if (f && typeof f.kind === "string" && typeof f.message === "string") {
        return { kind: f.kind, category: typeof f.category === "string" ? f.category : null, message: f.message };
      }
    } catch {
      // not the line
    }
  }
  return null;
}

// ---- ctl -----------------------------------------------------------------------------

async function ctl(op, args) {
  const state = readState();
  switch (op) {
    case "state":
      return { ok: true, state };
    case "process":
      return { ok: true, process: processView(state) };
    case "stop": {
      if (!state) return { ok: true, state: null };
      if (alive(state.process)) {
        await send(state, { op: "stop" }, 10_000).catch(() => null);
        for (let i = 0; i < 250 && alive(state.process); i++) await sleep(20);
        if (alive(state.process)) process.kill(state.process.pid, "SIGKILL");
        return { ok: true, state: readState() };
      }
      // No live runner to write it: the state is marked stopped under the lock.
      return withLock(async () => {
        const s = readState();
        if (s && s.lifecycle !== "stopped") {
          s.lifecycle = "stopped";
          writeState(s);
        }
        return { ok: true, state: s };
      });
    }
    case "session-open":
    case "reattach":
    case "turn":
    case "suspend": {
      if (!state) throw new Refusal("runner_state_missing", "no runner-state.json on this sandbox: start a runner first");
      if (!alive(state.process)) throw new Refusal("runner_not_running", `the runner process ${state.process?.pid ?? "?"} is not running`);
      const waitMs = Number(args["wait-ms"] ?? 20_000);
      const body = { op, waitMs };
      if (op === "turn") {
        body.seq = Number(args.seq);
        body.prompt = args.prompt ?? "";
        if (args["timeout-ms"] !== undefined) body.timeoutMs = Number(args["timeout-ms"]);
      }
      if (op === "session-open" && process.env.RUNWARDEN_SESSION_COMMAND) body.sessionCommand = process.env.RUNWARDEN_SESSION_COMMAND;
      try {
        return await send(state, body, waitMs + 5_000);
      } catch (err) {
        throw new Refusal("runner_not_running", `the runner did not answer on its ingress: ${err.message}`);
      }
    }
    default:
      throw new Refusal("runner_bad_request", `unknown ctl operation ${op}`);
  }
}

function send(state, body, timeoutMs) {
  const text = JSON.stringify({ ...body, root: ROOT });
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: "127.0.0.1", port: state.ingressPort ?? DEFAULT_PORT, path: "/op", method: "POST", headers: { "content-type": "application/json", "content-length": Buffer.byteLength(text) } },
      (res) => {
        const chunks = [];
        res.on("data", (c) => chunks.push(c));
        res.on("end", () => {
          try {
            resolve(JSON.parse(Buffer.concat(chunks).toString("utf8")));
          } catch (err) {
            reject(err);
          }
        });
        res.on("error", reject);
      },
    );
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on("error", reject);
    req.end(text);
  });
}

// ---- main ----------------------------------------------------------------------------

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const [mode, op] = args._;
  if (mode === "serve") return serve(args);
  let result;
  try {
    if (mode === "start") result = await start(args);
    else if (mode === "ctl") result = await ctl(op, args);
    else throw new Refusal("runner_bad_request", `usage: runnerd start|serve|ctl OP (got ${mode ?? "nothing"})`);
  } catch (err) {
    if (!(err instanceof Refusal)) {
      print({ ok: false, code: "runner_error", message: String(err?.stack ?? err) });
      process.exit(1);
    }
    result = { ok: false, code: err.code, message: err.message, ...err.extra };
  }
  print(result);
  process.exit(result.ok ? 0 : 2);
}

await main();
