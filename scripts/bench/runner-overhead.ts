/**
 * `tsx scripts/bench/runner-overhead.ts [rounds]`: the turn overhead of the toolbox path —
 * ms per runner operation (median, min, max) through the real emulator's toolbox API and
 * the real runnerd, with a no-op agent command, so the figure is the path, not the agent.
 */
import pg from "pg";
import { openDatabase } from "../../server/db/embedded";
import { withDatabase } from "../../server/db/url";
import { startEmulator } from "../../server/emulator/server";
import { env } from "../../server/env";
import { DaytonaProvider } from "../../server/providers/daytona";
import { runnerClientFor } from "../../server/providers/from-env";
import { buildLabels, creationName } from "../../server/providers/types";

const rounds = Number(process.argv[2] ?? 20);
const server = await openDatabase({ env, database: "postgres" });
const name = `rwbench_runner_${Date.now().toString(36)}`;
const admin = async (sql: string) => {
  const c = new pg.Client({ connectionString: server.adminUrl });
  await c.connect();
  await c.query(sql);
  await c.end();
};
await admin(`CREATE DATABASE ${name}`);
const emulator = await startEmulator({ port: 0, databaseUrl: withDatabase(server.adminUrl, name) });
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const timings = new Map<string, number[]>();
async function timed<T>(op: string, fn: () => Promise<T>): Promise<T> {
  const t0 = performance.now();
  const v = await fn();
  const list = timings.get(op) ?? [];
  list.push(performance.now() - t0);
  timings.set(op, list);
  return v;
}
try {
  const provider = new DaytonaProvider({ apiUrl: emulator.url, apiKey: "emulator-key", instanceId: "inst-bench" });
  const runner = runnerClientFor(provider, { apiKey: "emulator-key" });
  const sbx = await provider.create({ name: creationName("rw", "bench-runner"), labels: buildLabels({ instanceId: "inst-bench", companyId: "co-1", operationId: "bench-runner" }) });
  await timed("start (first: upload + spawn)", () => runner.start(sbx.id, { runId: "r", runnerInstanceId: "ri", sessionId: "s", agentCommand: "true" }));
  await timed("session-open", () => runner.sessionOpen(sbx.id, { timeoutMs: 5000 }));
  for (let i = 1; i <= rounds; i++) {
    await timed("turn (agent: true)", () => runner.turn(sbx.id, i));
    await timed("turn again (answered from the record)", () => runner.turn(sbx.id, i));
    await timed("process", () => runner.process(sbx.id));
    await timed("readState (files/download)", () => runner.readState(sbx.id));
  }
  await timed("stop", () => runner.stop(sbx.id));
  process.stdout.write(`runner operations through the toolbox path, ${rounds} rounds (ms):\n`);
  for (const [op, xs] of timings) {
    process.stdout.write(`  ${op.padEnd(40)} median ${median(xs).toFixed(1)}  min ${Math.min(...xs).toFixed(1)}  max ${Math.max(...xs).toFixed(1)}  n=${xs.length}\n`);
  }
} finally {
  await emulator.killAllProcesses().catch(() => 0);
  await emulator.close();
  await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  if (server.startedHere) await server.stop().catch(() => {});
}
