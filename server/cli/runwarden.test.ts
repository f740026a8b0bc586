import { spawn } from "node:child_process";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { verdictSchema } from "../engine";
import { bundledProgram, programArgs } from "../lib/bundle";

const ROOT = path.resolve(import.meta.dirname, "../..");
const TSX = path.join(ROOT, "node_modules/tsx/dist/cli.mjs");
const ENTRY = path.join(ROOT, "server/cli/runwarden.ts");
const FIXTURES = path.join(ROOT, "server/engine/fixtures");

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * The real command, as a child process: its sources bundled once (as the controller is), so
 * each case is a node start, not a TypeScript compile of the CLI's imports (~3 s → ~0.3 s).
 * `throughTsx` runs it as `npm run runwarden` does, from the sources.
 */
function runwarden(args: string[], stdin?: string, env?: NodeJS.ProcessEnv, throughTsx = false): Promise<Run> {
  return new Promise((resolve, reject) => {
    const command = throughTsx ? [TSX, ENTRY] : programArgs(bundledProgram(ENTRY, "runwarden"));
    const child = spawn(process.execPath, [...command, ...args], { cwd: ROOT, stdio: ["pipe", "pipe", "pipe"], env });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(stdin ?? "");
  });
}

/** What docs/rules.md implies for each example bundle. */
const EXPECTED: Record<string, Record<string, unknown>> = {
  "lease-binding-staged-created.json": { kind: "lease_binding", verdict: "admitted", code: null },
  "lease-binding-replacement.json": { kind: "lease_binding", verdict: "refused", code: "native_remote_recovery_lease_mismatch" },
  "lease-binding-staged-older-release.json": { kind: "lease_binding", verdict: "admitted", code: null },
  "lease-binding-staged-unknown-program.json": { kind: "lease_binding", verdict: "refused", reason: "staged_runner_program_unsupported", code: "native_runner_staged_attachment_recovery_unproven" },
  "bootstrap-restart-never-connected.json": { kind: "bootstrap_restart", verdict: "restart_bootstrap", code: null },
  "bootstrap-restart-connected.json": { kind: "bootstrap_restart", verdict: "refused", code: "runner_harness_state_mismatch: resumed_unavailable" },
  "startup-failure-remote-permission.json": {
    kind: "startup_failure",
    verdict: "terminal_failure",
    code: "native_provider_startup_rejected",
    canRetry: true,
    owner: "board",
  },
  "startup-failure-local-transient.json": { kind: "startup_failure", verdict: "retryable_failure", code: "native_session_interrupted", retryAfterSeconds: 30 },
  "process-exit-same-process.json": { kind: "process_exit", verdict: "alive", reason: "same_process" },
  "process-exit-pid-recycled.json": { kind: "process_exit", verdict: "exited", reason: "pid_recycled" },
  "creation-intent-creator-exited.json": { kind: "creation_intent", verdict: "reclaim" },
  "teardown-fence-superseded.json": { kind: "teardown_fence", verdict: "keep", reason: "attempt_superseded" },
  "teardown-fence-claimer-exited.json": { kind: "teardown_fence", verdict: "release", reason: "claimer_exited" },
  "teardown-fence-claimer-silent.json": { kind: "teardown_fence", verdict: "release", reason: "claimer_silent" },
  "sandbox-ownership-owned.json": { kind: "sandbox_ownership", verdict: "owned", reason: "record_matches" },
  "sandbox-ownership-unrecorded.json": { kind: "sandbox_ownership", verdict: "unrecorded", reason: "no_record" },
  "turn-result-agent-failed.json": { kind: "turn_result", verdict: "turn_failed", code: "agent_command_failed", owner: "agent", canRetry: true },
  "recovery-attempt-exhausted.json": { kind: "recovery_attempt", verdict: "give_up", code: "native_recovery_attempts_exhausted", canRetry: true },
  "recovery-attempt-provider-outage.json": { kind: "recovery_attempt", verdict: "wait", reason: "provider_unavailable", code: null, counted: false, notBefore: "2026-12-06T05:20:30.000Z" },
  "recovery-route-read-runner.json": { kind: "recovery_route", verdict: "read_runner", code: null },
  "recovery-route-turn-sandbox-stopped.json": { kind: "recovery_route", verdict: "next_turn_sandbox", reason: "turn_sandbox_stopped", code: null },
  "stopped-sandbox-auto-stopped.json": { kind: "stopped_sandbox", verdict: "start_sandbox", reason: "sandbox_startable", code: null },
  "runner-resume-after-auto-stop.json": { kind: "runner_resume", verdict: "resume", reason: "runner_dead_resumable", code: null },
};

let tmp = "";
beforeAll(async () => {
  tmp = await mkdtemp(path.join(tmpdir(), "runwarden-cli-"));
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

async function tempFile(name: string, content: string): Promise<string> {
  const file = path.join(tmp, name);
  await writeFile(file, content);
  return file;
}

describe.concurrent("runwarden decide (child process)", () => {
  test("every fixture has an expected verdict", async () => {
    const files = (await readdir(FIXTURES)).filter((f) => f.endsWith(".json")).sort();
    expect(files).toEqual(Object.keys(EXPECTED).sort());
  });

  test.each(Object.entries(EXPECTED))("decide %s prints one JSON line and exits 0", async (file, expected) => {
    const r = await runwarden(["decide", path.join(FIXTURES, file)]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout.endsWith("\n")).toBe(true);
    expect(r.stdout.trimEnd().split("\n")).toHaveLength(1);
    const verdict: unknown = JSON.parse(r.stdout);
    expect(verdict).toMatchObject(expected);
    expect(verdictSchema.safeParse(verdict).success).toBe(true);
  });

  test("- reads the bundle from standard input", async () => {
    const bundle = await readFile(path.join(FIXTURES, "startup-failure-remote-permission.json"), "utf8");
    const r = await runwarden(["decide", "-"], bundle);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ verdict: "terminal_failure", code: "native_provider_startup_rejected" });
  });

  test.each<{ name: string; content?: string; file?: string; line: string | RegExp }>([
    { name: "not JSON", content: "kind: lease_binding\n", line: /^runwarden decide: not JSON: .+$/ },
    { name: "an empty file", content: "", line: "runwarden decide: empty input: expected an evidence bundle as JSON" },
    { name: "whitespace only", content: " \n\t\n", line: "runwarden decide: empty input: expected an evidence bundle as JSON" },
    {
      name: "an unknown kind",
      content: JSON.stringify({ kind: "lease_bind" }),
      line: 'runwarden decide: evidence.kind: expected one of lease_binding, bootstrap_restart, startup_failure, process_exit, creation_intent, teardown_fence, sandbox_ownership, turn_result, recovery_attempt, recovery_route, stopped_sandbox, runner_resume (got "lease_bind")',
    },
    {
      name: "a wrong field type",
      content: JSON.stringify({
        kind: "lease_binding",
        path: "remote_reattach",
        claim: { runId: "r1", remote: { providerLeaseId: 42, remoteCwd: "/home/sandbox/work" } },
        target: { runId: "r1", providerLeaseId: "sbx-1", remoteCwd: "/home/sandbox/work", acquisitionOutcome: "created" },
      }),
      line: "runwarden decide: evidence.claim.remote.providerLeaseId: expected string",
    },
    { name: "an empty JSON array", content: "[]", line: "runwarden decide: empty array: expected at least one evidence bundle" },
    { name: "an array with a bad bundle", content: JSON.stringify([{ kind: "process_exit" }, 7]), line: "runwarden decide: bundle 1 of 2: evidence.observer: expected object (missing)" },
    { name: "a missing file", file: "does-not-exist.json", line: /^runwarden decide: cannot read .*does-not-exist\.json: no such file$/ },
  ])("$name → exit 2, one line on stderr naming it, nothing on stdout", async ({ name, content, file, line }) => {
    const target = file ? path.join(tmp, file) : await tempFile(`${name.replace(/\W+/g, "-")}.json`, content ?? "");
    const r = await runwarden(["decide", target]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    const lines = r.stderr.split("\n");
    expect(lines).toHaveLength(2);
    expect(lines[1]).toBe("");
    if (typeof line === "string") expect(lines[0]).toBe(line);
    else expect(lines[0]).toMatch(line);
  });

  test("bad input on standard input is reported the same way", async () => {
    const r = await runwarden(["decide", "-"], "{");
    expect([r.code, r.stdout]).toEqual([2, ""]);
    expect(r.stderr).toMatch(/^runwarden decide: not JSON: [^\n]+\n$/);
  });

  test("empty standard input → exit 2", async () => {
    const r = await runwarden(["decide", "-"], "");
    expect([r.code, r.stdout, r.stderr]).toEqual([2, "", "runwarden decide: empty input: expected an evidence bundle as JSON\n"]);
  });

  test("unknown extra fields are ignored", async () => {
    const bundle = JSON.parse(await readFile(path.join(FIXTURES, "lease-binding-staged-created.json"), "utf8")) as Record<string, unknown>;
    const r = await runwarden(["decide", "-"], JSON.stringify({ ...bundle, exportedAt: "2026-11-12T01:00:00.000Z", note: { by: "op" } }));
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ verdict: "admitted" });
  });

  test("a JSON array of bundles (the console's Download evidence file) gives one verdict line per bundle, in order", async () => {
    const files = ["startup-failure-remote-permission.json", "process-exit-pid-recycled.json", "teardown-fence-claimer-exited.json"];
    const bundles = await Promise.all(files.map(async (f) => JSON.parse(await readFile(path.join(FIXTURES, f), "utf8")) as unknown));
    const file = await tempFile("runwarden-evidence-run.json", `${JSON.stringify(bundles, null, 2)}\n`);
    const r = await runwarden(["decide", file]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const lines = r.stdout.trimEnd().split("\n");
    expect(lines).toHaveLength(files.length);
    lines.forEach((line, i) => expect(JSON.parse(line)).toMatchObject(EXPECTED[files[i]!]!));

    const explained = await runwarden(["decide", "--explain", file]);
    expect(explained.code).toBe(0);
    expect(explained.stdout.match(/^verdict: /gm)).toHaveLength(files.length);
    expect(explained.stdout).toMatch(/^bundle 3 of 3$/m);
  });

  test("--explain prints a table with every check, then the decision", async () => {
    const r = await runwarden(["decide", "--explain", path.join(FIXTURES, "bootstrap-restart-connected.json")]);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe("");
    const verdict = JSON.parse((await runwarden(["decide", path.join(FIXTURES, "bootstrap-restart-connected.json")])).stdout) as {
      checks: { name: string; ok: boolean }[];
    };
    for (const c of verdict.checks) expect(r.stdout).toMatch(new RegExp(`^\\d+\\s+${c.name}\\s.*${c.ok ? "pass" : "FAIL"}$`, "m"));
    expect(r.stdout).toMatch(/^#\s+check\s+expected\s+actual\s+result$/m);
    expect(r.stdout).toMatch(/^verdict:\s+refused$/m);
    expect(r.stdout).toMatch(/^code:\s+runner_harness_state_mismatch: resumed_unavailable$/m);
    expect(r.stdout).toMatch(/^reason:\s+runner_connected$/m);
    expect(r.stdout).toMatch(/^next action:\s+The run's saved progress could not be picked up: Retry to start it again$/m);
  });

  test("--explain reads standard input too", async () => {
    for (const file of Object.keys(EXPECTED).filter((f) => /superseded|exited|recycled/.test(f))) {
      const bundle = await readFile(path.join(FIXTURES, file), "utf8");
      const r = await runwarden(["decide", "--explain", "-"], bundle);
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(/^verdict: /m);
    }
  });

  test("--explain on a bad bundle fails like decide", async () => {
    const r = await runwarden(["decide", "--explain", "-"], '{"kind":"process_exit"}');
    expect([r.code, r.stdout, r.stderr]).toEqual([2, "", "runwarden decide: evidence.observer: expected object (missing)\n"]);
  });

  test("a missing FILE argument is a usage error (exit 2)", async () => {
    const r = await runwarden(["decide"]);
    expect([r.code, r.stdout]).toEqual([2, ""]);
    expect(r.stderr).toContain("missing required argument 'file'");
  });

  test("decide reads no configuration: an environment server/env.ts would reject does not matter", async () => {
    const bundle = await readFile(path.join(FIXTURES, "process-exit-same-process.json"), "utf8");
    const r = await runwarden(["decide", "-"], bundle, { NODE_ENV: "production", DATABASE_URL: "not-a-url", PORT: "-1" });
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ verdict: "alive" });
  });

  test("as `npm run runwarden` runs it (tsx, from the sources): the same verdict line as the bundle's, and --help", async () => {
    const file = path.join(FIXTURES, "teardown-fence-claimer-silent.json");
    const [fromSources, bundled, help] = await Promise.all([runwarden(["decide", file], undefined, undefined, true), runwarden(["decide", file]), runwarden(["--help"], undefined, undefined, true)]);
    expect([fromSources.code, fromSources.stderr]).toEqual([0, ""]);
    expect(fromSources.stdout).toBe(bundled.stdout);
    expect(JSON.parse(fromSources.stdout)).toMatchObject({ kind: "teardown_fence", verdict: "release" });
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("decide");
  });

  test("--help lists decide and exits 0", async () => {
    const r = await runwarden(["--help"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("decide");
  });
});
