import os from "node:os";
import type { Command } from "commander";
import { CliFailure, EXIT_BAD_INPUT, type CliIO } from "../io";

/**
 * `runwarden run submit …` and `runwarden run retry RUN_ID`: the same services as the
 * dashboard's tRPC procedures. The database is opened only when a subcommand runs, so
 * `decide` keeps working without one.
 */
export function registerRun(program: Command, io: CliIO): void {
  const run = program.command("run").description("submit and retry runs");

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
    .option("--json", "print the run as JSON")
    .action(async (opts: { company: string; task: string; agent: string; provider: string; target: string; mode: string; turns: string; json?: boolean }) => {
      const turns = Number(opts.turns);
      await withDatabase(async (db, env) => {
        const { submitRun } = await import("../../runs/submit");
        const created = await submitRun(
          db,
          env.RUNWARDEN_INSTANCE_ID,
          { companyId: opts.company, taskId: opts.task, agent: opts.agent, provider: opts.provider, target: opts.target as "remote", sandboxMode: opts.mode as "warm", turns },
          cliActor(),
        );
        io.stdout(opts.json ? `${JSON.stringify({ id: created.id, status: created.status, taskId: created.taskId })}\n` : `queued run ${created.id} for task ${created.taskId}\n`);
      });
    });

  run
    .command("retry")
    .description("retry a failed run: exactly one new run, however often it is called")
    .argument("<runId>", "the failed run")
    .action(async (runId: string) => {
      await withDatabase(async (db) => {
        const { retryRun } = await import("../../runs/retry");
        const result = await retryRun(db, runId, cliActor());
        io.stdout(`${result.created ? "started" : "already retried as"} run ${result.run.id}\n`);
      });
    });
}

function cliActor() {
  return { id: `cli:${os.userInfo().username}`, role: "operator" };
}

type Db = import("../../db/client").Db;
type Env = import("../../env").Env;

async function withDatabase(fn: (db: Db, env: Env) => Promise<void>): Promise<void> {
  const [{ env }, { openDatabase }, { migrate }, { createDb }, { AppError }, { ZodError }] = await Promise.all([
    import("../../env"),
    import("../../db/embedded"),
    import("../../db/migrate"),
    import("../../db/client"),
    import("../../errors"),
    import("zod"),
  ]);
  const database = await openDatabase({ env });
  await migrate(database.url);
  const db = createDb(database.url, { max: 2 });
  try {
    await fn(db, env);
  } catch (err) {
    if (err instanceof ZodError) {
      const issue = err.issues[0];
      throw new CliFailure(`runwarden run: ${issue?.path.join(".") || "input"}: ${issue?.message ?? "invalid"}`, EXIT_BAD_INPUT);
    }
    if (err instanceof AppError) throw new CliFailure(`runwarden run: ${err.message}`, err.code === "INVALID_INPUT" ? EXIT_BAD_INPUT : 1);
    throw err;
  } finally {
    await db.$disconnect();
    await database.stop();
  }
}
