import crypto from "node:crypto";
import type { DaytonaProvider } from "./daytona";
import { readRunnerState, WORK_DIR, type RunnerClient } from "./runner";
import { buildLabels, instanceScope, normaliseLabels } from "./types";

/**
 * The provider contract (docs/daytona.md, "The contract suite"): one list of scenarios that runs unchanged against the
 * emulator (`contract.int.test.ts`, in `npm test`) and against real Daytona
 * (`npm run test:daytona`). Steps run in order on a shared context; each names what it
 * checks and throws a plain Error when the provider does not hold up its end. Everything
 * the suite creates carries its own instance label and is destroyed at the end.
 */

export interface ContractTarget {
  /** Where it runs ("emulator", "daytona"), for messages. */
  label: string;
  /** A provider scoped to `instanceId`, with a small page size (see makeProvider). */
  makeProvider(options: { instanceId: string; pageSize?: number }): DaytonaProvider;
  makeRunner(provider: DaytonaProvider): RunnerClient;
}

export interface ContractContext {
  target: ContractTarget;
  instanceId: string;
  provider: DaytonaProvider;
  runner: RunnerClient;
  /** Ids of every sandbox created, for cleanup. */
  created: string[];
  main: { id: string; name: string } | null;
}

export interface ContractStep {
  name: string;
  run(ctx: ContractContext): Promise<void>;
}

/** The agent command of the turns: a real command with a side effect to count. */
const MARKER = "contract-marker.txt";
export const CONTRACT_AGENT_COMMAND = `echo "turn $RUNWARDEN_TURN of $RUNWARDEN_RUN_ID" >> ${MARKER}; echo "lines: $(wc -l < ${MARKER})"`;

export function contractContext(target: ContractTarget): ContractContext {
  // Unique per run, so the suite never sees (or lists) anything but its own sandboxes.
  const instanceId = `rw-contract-${Date.now().toString(36)}-${crypto.randomBytes(3).toString("hex")}`;
  const provider = target.makeProvider({ instanceId });
  return { target, instanceId, provider, runner: target.makeRunner(provider), created: [], main: null };
}

function assert(ok: boolean, message: string): asserts ok {
  if (!ok) throw new Error(message);
}

function labelsFor(ctx: ContractContext, op: string, extra: Record<string, string> = {}) {
  return { ...buildLabels({ instanceId: ctx.instanceId, companyId: "co-contract", operationId: op }), ...extra };
}

async function poll<T>(what: string, fn: () => Promise<T>, done: (v: T) => boolean, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (let delay = 50; ; delay = Math.min(delay * 2, 2000)) {
    const v = await fn();
    if (done(v)) return v;
    if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(v)} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, delay));
  }
}

function mainOf(ctx: ContractContext): { id: string; name: string } {
  assert(ctx.main !== null, "an earlier step did not create the sandbox");
  return ctx.main;
}

export const CONTRACT_STEPS: ContractStep[] = [
  {
    name: "create by exact name and labels; get by that name",
    async run(ctx) {
      const name = `${ctx.instanceId}-main`;
      const created = await ctx.provider.create({ name, labels: labelsFor(ctx, "op-main") });
      ctx.created.push(created.id);
      ctx.main = { id: created.id, name };
      assert(created.name === name, `named ${created.name}, asked for ${name}`);
      assert(["creating", "started"].includes(created.state), `a new sandbox is ${created.state}`);
      const labels = normaliseLabels(created.labels);
      assert(labels.instance === ctx.instanceId && labels.operation === "op-main", `labels came back as ${JSON.stringify(created.labels)}`);
      const found = await ctx.provider.getByName(name);
      assert(found?.id === created.id, `GET by name found ${found?.id ?? "nothing"}, created ${created.id}`);
    },
  },
  {
    name: "list by labels across pages (only this instance's, each once)",
    async run(ctx) {
      const run = { "runwarden.run": "run-contract-list" };
      const names = [`${ctx.instanceId}-l1`, `${ctx.instanceId}-l2`, `${ctx.instanceId}-l3`];
      for (const [i, name] of names.entries()) {
        const s = await ctx.provider.create({ name, labels: labelsFor(ctx, `op-l${i + 1}`, run) });
        ctx.created.push(s.id);
      }
      const paged = ctx.target.makeProvider({ instanceId: ctx.instanceId, pageSize: 2 });
      // Daytona's list is eventually consistent: allow it a moment to show all three.
      const listed = await poll(
        "list by labels",
        async () => (await paged.listByLabels({ ...instanceScope(ctx.instanceId), ...run })).map((s) => s.name).sort(),
        (v) => v.length >= names.length,
        30_000,
      );
      assert(JSON.stringify(listed) === JSON.stringify([...names].sort()), `listed ${JSON.stringify(listed)}, expected ${JSON.stringify(names)}`);
      const all = await paged.listByLabels(instanceScope(ctx.instanceId));
      assert(all.some((s) => s.id === mainOf(ctx).id), "the instance-wide list misses the main sandbox");
      assert(new Set(all.map((s) => s.id)).size === all.length, "a sandbox was listed twice across pages");
      // Page by page (the orphans inventory's pass): the same sandboxes, no page over the page size.
      const pages: string[][] = [];
      for await (const page of paged.listPagesByLabels(instanceScope(ctx.instanceId))) pages.push(page.map((s) => s.id));
      assert(pages.every((p) => p.length <= 2), `a page of ${Math.max(...pages.map((p) => p.length))} sandboxes at a page size of 2`);
      assert(JSON.stringify(pages.flat().sort()) === JSON.stringify(all.map((s) => s.id).sort()), `page by page listed ${JSON.stringify(pages)}, whole ${JSON.stringify(all.map((s) => s.id))}`);
    },
  },
  {
    name: "upload and start the runner, then session.open",
    async run(ctx) {
      const { id } = mainOf(ctx);
      const state = await ctx.runner.start(id, { runId: "run-contract", runnerInstanceId: "ri-contract", sessionId: "s-contract", agentCommand: CONTRACT_AGENT_COMMAND });
      assert(state.lifecycle === "connecting" && state.runId === "run-contract", `runner started as ${state.lifecycle} for ${state.runId}`);
      const proc = await ctx.runner.process(id);
      assert(proc.state === "running", `the runner process is ${proc.state}`);
      const opened = await ctx.runner.sessionOpen(id, { timeoutMs: 15_000 });
      assert(opened.ok, `session.open failed: ${opened.ok ? "" : opened.message}`);
      assert(opened.state.lifecycle === "ready", `after session.open the runner is ${opened.state.lifecycle}`);
    },
  },
  {
    name: "two turns run a real command, each exactly once",
    async run(ctx) {
      const { id } = mainOf(ctx);
      for (const seq of [1, 2]) {
        const turn = await ctx.runner.turn(id, seq, { prompt: `turn ${seq}` });
        assert(turn.command.seq === seq && turn.command.exitCode === 0, `turn ${seq}: ${JSON.stringify(turn.command)}`);
        assert((turn.command.outputTail ?? "").includes(`lines: ${seq}`), `turn ${seq} printed ${JSON.stringify(turn.command.outputTail)}`);
      }
      // A turn asked again is answered from the runner's record, not run again.
      await ctx.runner.turn(id, 2);
      const marker = (await ctx.provider.readFile(id, `${WORK_DIR}/${MARKER}`)) ?? "";
      const lines = marker.trim().split("\n");
      assert(lines.length === 2 && lines[0] === "turn 1 of run-contract" && lines[1] === "turn 2 of run-contract", `the marker file holds ${JSON.stringify(marker)}`);
    },
  },
  {
    name: "read the runner state",
    async run(ctx) {
      const state = await readRunnerState(ctx.provider, mainOf(ctx).id);
      assert(state !== null, "no runner state");
      assert(state.lastControllerCommandSeq === 2 && state.lifecycle === "ready", `state: seq ${state.lastControllerCommandSeq}, ${state.lifecycle}`);
      const seqs = state.processedCommands.map((c) => (c as { seq?: number }).seq);
      assert(JSON.stringify(seqs) === "[1,2]", `processed commands ${JSON.stringify(seqs)}`);
    },
  },
  {
    name: "stop: the sandbox stops and its runner with it",
    async run(ctx) {
      const { id } = mainOf(ctx);
      const stopped = await ctx.provider.stop(id);
      assert(stopped.state === "stopped", `after stop the sandbox is ${stopped.state}`);
      const started = await ctx.provider.ensureStarted(id);
      assert(started.outcome === "restarted" && started.sandbox.state === "started", `ensureStarted: ${started.outcome}, ${started.sandbox.state}`);
      const proc = await ctx.runner.process(id);
      assert(proc.state !== "running", "the runner survived a stop");
    },
  },
  {
    name: "destroy; 404 after",
    async run(ctx) {
      const { id, name } = mainOf(ctx);
      const out = await ctx.provider.destroy(id);
      assert(out.outcome === "destroyed", `destroy said ${out.outcome}`);
      assert((await ctx.provider.getByName(name)) === null, "GET by name still finds the destroyed sandbox");
      assert((await ctx.provider.destroy(id)).outcome === "already_gone", "a second destroy was not already_gone");
      await poll("GET by id after destroy", async () => (await ctx.provider.getById(id))?.state ?? null, (s) => s === null || s === "destroyed", 120_000);
      const listed = await ctx.provider.listByLabels({ ...instanceScope(ctx.instanceId), "runwarden.operation": "op-main" });
      assert(listed.every((s) => s.state === "destroying"), `still listed: ${JSON.stringify(listed.map((s) => s.state))}`);
    },
  },
];

/** Destroys everything the suite created (best effort; a failure is reported, not thrown). */
export async function cleanupContract(ctx: ContractContext): Promise<string[]> {
  const problems: string[] = [];
  for (const id of ctx.created) {
    try {
      await ctx.provider.destroy(id);
    } catch (err) {
      problems.push(`${id}: ${(err as Error).message}`);
    }
  }
  return problems;
}
