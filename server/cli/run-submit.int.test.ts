import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { instanceIdOf } from "../db/installation";
import { env } from "../env";
import { processedCommandSchema, runnerStateSchema } from "../providers/runner";
import { inProcessCli } from "../test/cli";
import { startControllerHarness, waitFor, type ControllerHarness } from "../test/controller";
import { controllerProcesses } from "../test/controller-process";

/**
 * `runwarden run submit --turn-sleep` end to end (README "A restart."): the run row keeps the
 * sleep, a real controller starts the runner with the demo agent's command carrying it
 * (RUNWARDEN_DEMO_SLEEP_MS, runner/demo-agent.mjs), and each turn takes that long. The
 * option's parse and runs.create's field are in server/cli/turn-sleep.test.ts.
 */

let h: ControllerHarness;
let mine = "";
beforeAll(async () => {
  h = await startControllerHarness();
  mine = await instanceIdOf(h.db.db, env.RUNWARDEN_INSTANCE_ID);
});
afterAll(async () => {
  await h?.close();
});

const procs = controllerProcesses(() => h, {});
const cli = inProcessCli(() => h.db.db);

describe("runwarden run submit --turn-sleep", () => {
  it("the demo agent sleeps that long in each turn: kept on the run, in the runner's agent command, in each turn's duration", async () => {
    const submitted = await cli("run", "submit", "--company", "co-a", "--task", "slow-demo", "--agent", "demo", "--turns", "2", "--turn-sleep", "1s");
    expect(submitted.code).toBe(0);
    const id = /^queued run (\S+) for task slow-demo \(the demo agent sleeps 1 s per turn\)\n$/.exec(submitted.out)?.[1];
    expect(id).toBeDefined();
    expect(await h.db.db.run.findUniqueOrThrow({ where: { id } })).toMatchObject({ demoSleepMs: 1_000, agentCommand: null });

    await procs.controller({ RUNWARDEN_INSTANCE_ID: mine });
    const run = await waitFor("the slow demo run to succeed", async () => {
      const r = await h.db.db.run.findUniqueOrThrow({ where: { id } });
      if (r.status === "failed") throw new Error(`the run failed: ${r.failureCode} ${r.failureDetail}`);
      return r.status === "succeeded" ? r : null;
    });
    const state = runnerStateSchema.parse(run.lastRunnerState);
    expect(state.agentCommand).toMatch(/^RUNWARDEN_DEMO_SLEEP_MS=1000 node '[^']+\/demo-agent-[0-9a-f]+\.mjs'$/);
    const turns = state.processedCommands.map((c) => processedCommandSchema.parse(c));
    expect(turns.map((t) => [t.seq, t.exitCode])).toEqual([
      [1, 0],
      [2, 0],
    ]);
    for (const t of turns) expect(t.durationMs).toBeGreaterThanOrEqual(1_000);
  });

  it("a Retry keeps the sleep", async () => {
    const submitted = await cli("run", "submit", "--company", "co-a", "--task", "slow-retry", "--agent", "demo", "--turn-sleep", "500ms", "--json");
    const id = (JSON.parse(submitted.out) as { id: string }).id;
    expect((await cli("run", "cancel", id)).code).toBe(0);
    const retried = await cli("run", "retry", id);
    const next = /^started run (\S+)\n$/.exec(retried.out)?.[1];
    expect(await h.db.db.run.findUniqueOrThrow({ where: { id: next } })).toMatchObject({ previousRunId: id, demoSleepMs: 500 });
  });

  it("a bad --turn-sleep, or one beside --agent-command, is exit 2 naming the option, audited as refused; nothing is queued", async () => {
    expect(await cli("run", "submit", "--company", "co-a", "--task", "t-bad", "--agent", "demo", "--turn-sleep", "2m")).toEqual({
      code: 2,
      out: "",
      err: 'runwarden run: --turn-sleep takes a duration from 0 to 60s, such as 3s or 500ms, not "2m"\n',
    });
    expect(await cli("run", "submit", "--company", "co-a", "--task", "t-bad", "--agent", "demo", "--turn-sleep", "3s", "--agent-command", "true")).toEqual({
      code: 2,
      out: "",
      err: "runwarden run: --turn-sleep is the demo agent's sleep: not with --agent-command (put a sleep in the command instead)\n",
    });
    expect(await h.db.db.run.count({ where: { taskId: "t-bad" } })).toBe(0);
    const refused = await h.db.db.auditEntry.findMany({ where: { action: "run.submit", outcome: "refused" }, orderBy: { id: "asc" } });
    expect(refused.map((e) => [e.input, e.detail])).toEqual([
      [expect.objectContaining({ taskId: "t-bad", turnSleep: "2m" }), { reason: '--turn-sleep takes a duration from 0 to 60s, such as 3s or 500ms, not "2m"' }],
      [expect.objectContaining({ taskId: "t-bad", turnSleep: "3s", agentCommand: "true" }), { reason: "--turn-sleep is the demo agent's sleep: not with --agent-command (put a sleep in the command instead)" }],
    ]);
  });
});
