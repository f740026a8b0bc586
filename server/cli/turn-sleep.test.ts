import { describe, expect, test } from "vitest";
import { demoAgentCommand, DEMO_SLEEP_ENV } from "../providers/runner";
import { DEMO_SLEEP_MAX_MS, submitRunInput } from "../runs/submit";
import { AppError } from "../errors";
import { parseTurnSleep } from "./turn-sleep";

/**
 * `run submit --turn-sleep` (README "A restart."): the option's parse, runs.create's
 * `demoSleepMs` field, and the demo agent's command that carries it into the sandbox
 * (runner/demo-agent.mjs reads RUNWARDEN_DEMO_SLEEP_MS). The whole path, submit to a turn that
 * sleeps, is in server/cli/run-submit.int.test.ts.
 */

const base = { companyId: "co-a", taskId: "t-1", agent: "demo", provider: "codex" };

describe("--turn-sleep", () => {
  test.each([
    ["3s", 3_000],
    ["2.5s", 2_500],
    ["500ms", 500],
    ["3", 3_000],
    ["0", 0],
    ["60s", 60_000],
  ])("%s is %i ms", (text, ms) => {
    expect(parseTurnSleep(text, DEMO_SLEEP_MAX_MS)).toBe(ms);
  });

  test.each(["61s", "abc", "-1s", "3 m", "1.5ms", "", "3h"])("%j is refused as bad input naming --turn-sleep and its range", (text) => {
    let thrown: unknown;
    try {
      parseTurnSleep(text, DEMO_SLEEP_MAX_MS);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(AppError);
    expect((thrown as AppError).code).toBe("INVALID_INPUT");
    expect((thrown as AppError).message).toBe(`--turn-sleep takes a duration from 0 to 60s, such as 3s or 500ms, not ${JSON.stringify(text)}`);
  });
});

describe("runs.create's demoSleepMs", () => {
  test("whole milliseconds up to the maximum are kept", () => {
    expect(submitRunInput.parse({ ...base, demoSleepMs: 3_000 }).demoSleepMs).toBe(3_000);
    expect(submitRunInput.parse({ ...base, demoSleepMs: DEMO_SLEEP_MAX_MS }).demoSleepMs).toBe(DEMO_SLEEP_MAX_MS);
    expect(submitRunInput.parse(base).demoSleepMs).toBeUndefined();
  });

  test.each<[string, Record<string, unknown>, string]>([
    ["over the maximum", { demoSleepMs: DEMO_SLEEP_MAX_MS + 1 }, "the demo agent's sleep is over 60 s"],
    ["negative", { demoSleepMs: -1 }, "the demo agent's sleep is negative"],
    ["a fraction", { demoSleepMs: 1.5 }, "the demo agent's sleep is not whole milliseconds"],
    ["with an agent command of its own", { demoSleepMs: 1_000, agentCommand: "sleep 1" }, "the demo agent's sleep applies only without agentCommand (put a sleep in the command instead)"],
    ["not under the run's turn budget", { demoSleepMs: 5_000, turnTimeoutMs: 5_000 }, "the demo agent's sleep is not under the run's turn budget (turnTimeoutMs)"],
  ])("%s is refused on the field demoSleepMs", (_name, extra, message) => {
    const result = submitRunInput.safeParse({ ...base, ...extra });
    expect(result.success).toBe(false);
    expect(result.error?.issues.map((i) => [i.path.join("."), i.message])).toEqual([["demoSleepMs", message]]);
  });
});

describe("the demo agent's command", () => {
  test("carries the run's sleep in RUNWARDEN_DEMO_SLEEP_MS, and none without one", () => {
    const path = "/home/sandbox/.runwarden/bin/demo-agent-abc.mjs";
    expect(DEMO_SLEEP_ENV).toBe("RUNWARDEN_DEMO_SLEEP_MS");
    expect(demoAgentCommand(path, 3_000)).toBe(`RUNWARDEN_DEMO_SLEEP_MS=3000 node '${path}'`);
    expect(demoAgentCommand(path, null)).toBe(`node '${path}'`);
    expect(demoAgentCommand(path, 0)).toBe(`node '${path}'`);
  });
});
