import type { Command } from "commander";
import { withCliDatabase } from "../database";
import type { CliIO } from "../io";
import { parseTurnSleep } from "../turn-sleep";
import { uuidSchema } from "../../lib/ids";
import { isBulk, runBulk, withBulkOptions, type BulkOptions } from "./bulk";
import { registerRunCancel } from "./run-cancel";
import { registerRunRead } from "./run-read";

/** `--as` on the commands that change runs: whose role and companies apply (server/cli/actor.ts). */
const AS_FLAG = "--as <email>";
const asHelp = (role: string) => `act for this person: their role (${role} or up) and companies apply, a refusal audited (default: this machine's operator, every company)`;

/**
 * `runwarden run submit …`, `run retry RUN_ID`, `run cancel` and the reads `run list` and
 * `run show`: the same services as the dashboard's tRPC procedures (server/trpc/routers/runs.ts),
 * under the same roles and companies when `--as` names a person. The database is opened only
 * when a subcommand runs, so `decide` keeps working without one.
 */
export function registerRun(program: Command, io: CliIO): void {
  const run = program.command("run").description("list, show, submit, retry and cancel runs");
  registerRunRead(run, io);
  registerRunCancel(run, io);

  run
    .command("submit")
    .description("queue a run for a task; a controller picks it up")
    .requiredOption("--company <id>", "company id")
    .requiredOption("--task <id>", "task (issue) id")
    .requiredOption("--agent <name>", "agent name")
    .option("--provider <name>", "AI provider (codex, claude, …)", "codex")
    .option("--target <target>", "execution target: local or remote", "remote")
    .option("--mode <mode>", "sandbox mode: per_turn or warm", "warm")
    .option("--turns <n>", "agent turns to run", "3")
    .option("--agent-command <cmd>", "shell command each turn runs in the sandbox's work dir (default: the demo agent)")
    .option("--turn-timeout <seconds>", "this run's turn budget: the runner kills the agent past it (default: the controller's RUNWARDEN_TURN_TIMEOUT_MS)")
    .option("--turn-sleep <duration>", "the demo agent sleeps this long in each turn before its work, e.g. 3s or 500ms (up to 60s; not with --agent-command): a slow run to kill a controller under")
    .option(AS_FLAG, asHelp("operator"))
    .option("--json", "print the run as JSON")
    .action(async (opts: { company: string; task: string; agent: string; provider: string; target: string; mode: string; turns: string; agentCommand?: string; turnTimeout?: string; turnSleep?: string; as?: string; json?: boolean }) => {
      const turns = Number(opts.turns);
      const turnTimeoutMs = opts.turnTimeout === undefined ? undefined : Number(opts.turnTimeout) * 1000;
      await withCliDatabase("run", io, async (db, env) => {
        const [{ submitRunInScope, submitRunInput, DEMO_SLEEP_MAX_MS }, { instanceIdOf }, { auditedCli, cliActor, machineActor }, { AppError }] = await Promise.all([
          import("../../runs/submit"),
          import("../../db/installation"),
          import("../actor"),
          import("../../errors"),
        ]);
        // runs.create's rule: the operator role, a company the person acts for (submitRunInScope). Without --as: the machine's operator.
        const { actor, scope } = opts.as === undefined ? { actor: machineActor("operator"), scope: { all: true } as const } : await cliActor(db, opts.as, "operator", "run.submit");
        const input = {
          companyId: opts.company,
          taskId: opts.task,
          agent: opts.agent,
          provider: opts.provider,
          target: opts.target as "remote",
          sandboxMode: opts.mode as "warm",
          turns,
          agentCommand: opts.agentCommand,
          ...(turnTimeoutMs === undefined ? {} : { turnTimeoutMs }),
        };
        const instanceId = await instanceIdOf(db, env.RUNWARDEN_INSTANCE_ID);
        // A --turn-sleep refused here is audited with the text given; runs.create's schema checks demoSleepMs again.
        const audited = opts.turnSleep === undefined ? input : { ...input, turnSleep: opts.turnSleep };
        const created = await auditedCli(db, actor, "run.submit", audited, () => {
          if (opts.turnSleep === undefined) return submitRunInScope(db, instanceId, submitRunInput.parse(input), actor, scope);
          const demoSleepMs = parseTurnSleep(opts.turnSleep, DEMO_SLEEP_MAX_MS);
          if (opts.agentCommand !== undefined) throw new AppError("INVALID_INPUT", "--turn-sleep is the demo agent's sleep: not with --agent-command (put a sleep in the command instead)");
          return submitRunInScope(db, instanceId, submitRunInput.parse({ ...input, demoSleepMs }), actor, scope);
        });
        const sleeps = created.demoSleepMs ? ` (the demo agent sleeps ${created.demoSleepMs / 1000} s per turn)` : "";
        io.stdout(opts.json ? `${JSON.stringify({ id: created.id, status: created.status, taskId: created.taskId })}\n` : `queued run ${created.id} for task ${created.taskId}${sleeps}\n`);
      });
    });

  const retry = run
    .command("retry")
    .description("retry a failed run: exactly one new run, however often it is called (or a set: --failure-code … --dry-run, then --plan … --confirm …)")
    .argument("[runId]", "the failed run")
    // A set (bulk.ts) needs the operator role, as plans.preview and plans.confirm do.
    .option(AS_FLAG, `${asHelp("board")}; a set needs the operator role`);
  withBulkOptions(retry, "retry")
    .action(async (runId: string | undefined, opts: BulkOptions) => {
      if (isBulk(opts) || !runId) return runBulk(io, "retry", runId, opts);
      await withCliDatabase("run", io, async (db, env) => {
        const [{ retryRun }, { auditedCli, cliActor, machineActor }, { z }] = await Promise.all([import("../../runs/retry"), import("../actor"), import("zod")]);
        // runs.retry's rule: the board role, a run of the person's companies (another's reads as one that does not exist).
        const { actor, scope } = opts.as === undefined ? { actor: machineActor("operator"), scope: { all: true } as const } : await cliActor(db, opts.as, "board", "run.retry");
        // The same input contract as runs.retry: a malformed id is refused (and audited), not a database error.
        const result = await auditedCli(db, actor, "run.retry", { runId }, () => retryRun(db, z.object({ runId: uuidSchema }).parse({ runId }).runId, actor, scope));
        io.stdout(`${result.created ? "started" : "already retried as"} run ${result.run.id}\n`);
        if (result.leasesQueued.length === 0) return;
        // runs.retry's one scoped cleanup attempt of the old run's sandboxes (the sweep retries what fails).
        const [{ servicesFor }, { instanceIdOf }] = await Promise.all([import("../../services"), import("../../db/installation")]);
        const services = servicesFor(db, await instanceIdOf(db, env.RUNWARDEN_INSTANCE_ID));
        for (const c of await services.tearDownRetriedLeases(result.leasesQueued)) io.stdout(`  sandbox lease ${c.leaseId}: ${c.outcome}\n`);
      });
    });
}

