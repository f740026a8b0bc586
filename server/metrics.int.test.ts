import { spawnSync } from "node:child_process";
import crypto from "node:crypto";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { sweepSummarySchema } from "./controller/sweeps";
import { readHealth } from "./health";
import { metricsResponse, renderMetrics, SWEEP_PASS_KINDS } from "./metrics";
import { createTestDatabase, type TestDatabase } from "./test/db";

/**
 * `/api/metrics` against Prometheus' own linter and its counter semantics (docs/operations.md,
 * Metrics): the route's answer, over a database where every family has a sample, goes through
 * `promtool check metrics` (Debian's `prometheus` package, which .ci/run installs). promtool
 * lints only families that have samples, so the test first proves that each one has.
 */

const TOKEN = "a-scraper-token-for-promtool";
const HOW_TO_GET_PROMTOOL = [
  "promtool is not on PATH: this test runs the metrics through Prometheus' own linter.",
  "  Debian/Ubuntu:  apt-get install -y --no-install-recommends prometheus   (ships /usr/bin/promtool; .ci/run does this)",
  "  elsewhere:      put promtool from a Prometheus release (prometheus.io/download) on PATH",
].join("\n");

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase(inject("adminUrl"), inject("templateDatabase"), inject("runPrefix"));
  await seed(t);
});
afterAll(() => t?.drop());

/** One row of each kind a family reads, so that every family has a sample for promtool to lint. */
async function seed({ db }: TestDatabase) {
  await db.instance.create({ data: { id: "inst-m", name: "m" } });
  const base = { instanceId: "inst-m", companyId: "co-1", agent: "a", provider: "codex", target: "remote" as const, sandboxMode: "warm" as const };
  const run = await db.run.create({ data: { ...base, taskId: "m-failed", status: "failed", outcome: "terminal_failure", failureCode: "agent_command_failed" } });
  await db.proof.create({ data: { runId: run.id, kind: "creation_intent", verdict: "reclaim", checks: [], evidence: {}, output: {}, evaluatedBy: "test" } });
  await db.sweepPass.create({ data: { kind: "creation_intents", instanceId: "inst-m", bootId: "b-1", startedAt: new Date(), finishedAt: new Date(), judged: 3, reclaimed: 1 } });
  const created = new Date(Date.now() - 12_000);
  await db.sandboxCreationIntent.create({
    data: {
      id: crypto.randomUUID(),
      instanceId: "inst-m",
      companyId: "co-1",
      runId: run.id,
      creationName: "rw-create-m",
      labels: {},
      settleDeadline: created,
      nextAttemptAt: created,
      status: "reclaimed",
      createdAt: created,
      resolvedAt: new Date(),
    },
  });
  await db.environmentLease.create({ data: { runId: run.id, instanceId: "inst-m", companyId: "co-1", provider: "emulator", acquisitionOutcome: "created", status: "released" } });
  // Two live controllers of two builds (a rolling deploy), and one that recorded no version (the build before these columns).
  const controller = (bootId: string, version: string | null, runnerDigest: string | null) =>
    // Seen an hour ahead: live however slowly this file runs (the window is 10 s on the database's clock).
    db.controllerProcess.create({ data: { bootId, instanceId: "inst-m", pid: 1, startedAt: new Date(), hostname: "h", pidSpace: "p", lastSeenAt: new Date(Date.now() + 3_600_000), version, runnerDigest, runnerProtocol: runnerDigest ? 1 : null } });
  await controller("b-old", "0.1.0+aaaaaaa", "14d16f8849eae6b5");
  await controller("b-new", "0.1.0+bbbbbbb", "fc6ee72338af611f");
  await controller("b-new-2", "0.1.0+bbbbbbb", "fc6ee72338af611f");
  await controller("b-older", null, null);
}

/** `promtool check metrics` on `text`: its exit code and what it said. Missing promtool fails, saying how to install it. */
function promtool(text: string): { status: number | null; output: string } {
  const out = spawnSync("promtool", ["check", "metrics"], { input: text, encoding: "utf8", timeout: 30_000 });
  if ((out.error as NodeJS.ErrnoException | undefined)?.code === "ENOENT") throw new Error(HOW_TO_GET_PROMTOOL);
  if (out.error) throw out.error;
  return { status: out.status, output: `${out.stdout}${out.stderr}`.trim() };
}

/** Each family's declared type, and the names of the samples it has. */
function families(text: string): Map<string, { type: string; samples: number }> {
  const out = new Map<string, { type: string; samples: number }>();
  for (const line of text.split("\n")) {
    const declared = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (declared) out.set(declared[1]!, { type: declared[2]!, samples: 0 });
    else if (line && !line.startsWith("#")) {
      const name = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(line)?.[0] ?? "";
      const family = out.get(name);
      if (family) family.samples += 1;
    }
  }
  return out;
}

/** The value of one sample (`name{labels}` exactly as exposed), or undefined. */
function sample(text: string, series: string): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe("/api/metrics through promtool", () => {
  it("passes `promtool check metrics`, every family linted (each has a sample)", async () => {
    const res = await metricsResponse(t.db, new Request("http://x/api/metrics", { headers: { authorization: `Bearer ${TOKEN}` } }), TOKEN);
    expect(res.status).toBe(200);
    const text = await res.text();
    const found = families(text);
    expect(found.size).toBeGreaterThanOrEqual(17);
    expect([...found].filter(([, f]) => f.samples === 0).map(([name]) => name)).toEqual([]);
    expect(promtool(text)).toEqual({ status: 0, output: "" });
  });

  it("a figure that only grows is a counter named _total; a level is a gauge without _total", async () => {
    const { body } = await renderMetrics(t.db);
    const found = families(body);
    for (const name of ["runwarden_proofs_total", "runwarden_sweep_passes_total", "runwarden_sweep_rows_judged_total", "runwarden_sweep_reclaims_total", "runwarden_forecast_missed_total"]) {
      expect({ name, type: found.get(name)?.type }).toEqual({ name, type: "counter" });
    }
    for (const [name, f] of found) expect({ name, type: f.type }).toEqual({ name, type: name.endsWith("_total") ? "counter" : "gauge" });
  });
});

describe("the builds running side by side (docs/operations.md, Upgrades and migrations)", () => {
  it("each live controller's build and runner program, counted; one that recorded none is unknown", async () => {
    const { body } = await renderMetrics(t.db);
    expect(sample(body, 'runwarden_controller_versions{version="0.1.0+aaaaaaa",runner_digest="14d16f8849eae6b5"}')).toBe(1);
    expect(sample(body, 'runwarden_controller_versions{version="0.1.0+bbbbbbb",runner_digest="fc6ee72338af611f"}')).toBe(2);
    expect(sample(body, 'runwarden_controller_versions{version="unknown",runner_digest="unknown"}')).toBe(1);
    const health = await readHealth(t.db, { all: true }, "inst-m");
    expect(health.controllers.versions).toEqual([
      { version: "0.1.0+bbbbbbb", runnerDigest: "fc6ee72338af611f", runnerProtocol: 1, controllers: 2 },
      { version: "0.1.0+aaaaaaa", runnerDigest: "14d16f8849eae6b5", runnerProtocol: 1, controllers: 1 },
      { version: "unknown", runnerDigest: null, runnerProtocol: null, controllers: 1 },
    ]);
  });
});

describe("counters across dashboard restarts", () => {
  it("are read from the database's persistent totals: a fresh registry (a restarted or second dashboard) reports the same figure, and it grows with the rows", async () => {
    const series = 'runwarden_proofs_total{kind="creation_intent",verdict="reclaim"}';
    const first = sample((await renderMetrics(t.db)).body, series);
    const again = sample((await renderMetrics(t.db)).body, series);
    expect(first).toBe(1);
    expect(again).toBe(first);
    await t.db.proof.create({ data: { kind: "creation_intent", verdict: "reclaim", checks: [], evidence: {}, output: {}, evaluatedBy: "test" } });
    expect(sample((await renderMetrics(t.db)).body, series)).toBe(2);
  });

  it("each counter's known series is exported at 0 before its first event, so increase() sees the first one", async () => {
    const { body } = await renderMetrics(t.db);
    expect(sample(body, 'runwarden_proofs_total{kind="sandbox_ownership",verdict="refused"}')).toBe(0);
    expect(sample(body, 'runwarden_sweep_passes_total{kind="teardown"}')).toBe(0);
    expect(sample(body, 'runwarden_sweep_reclaims_total{kind="teardown"}')).toBe(0);
    expect(sample(body, "runwarden_forecast_missed_total")).toBe(0);
    // The sweep kinds metrics.ts knows are the sweeps' own.
    expect([...SWEEP_PASS_KINDS]).toEqual(sweepSummarySchema.shape.kind.options);
  });
});
