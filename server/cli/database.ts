import { CliFailure, EXIT_BAD_INPUT, type CliIO } from "./io";

type Db = import("../db/client").Db;
type Env = import("../env").Env;

/**
 * Opens the database for a subcommand that needs one (embedded or DATABASE_URL, migrated),
 * and turns the errors a person can fix into one line and an exit code. Everything is
 * imported here, lazily, so `decide` never loads the database or reads the environment.
 */
export async function withCliDatabase(command: string, io: CliIO, fn: (db: Db, env: Env) => Promise<void>): Promise<void> {
  const [{ env }, { openDatabase }, { migrate }, { createDb }, { AppError }, { ZodError }] = await Promise.all([
    import("../env"),
    import("../db/embedded"),
    import("../db/migrate"),
    import("../db/client"),
    import("../errors"),
    import("zod"),
  ]);
  const database = io.db ? null : await openDatabase({ env });
  if (database) await migrate(database.url);
  const db = io.db ?? createDb(database!.url, { max: 2 });
  try {
    await fn(db, env);
  } catch (err) {
    if (err instanceof ZodError) {
      const issue = err.issues[0];
      throw new CliFailure(`runwarden ${command}: ${issue?.path.join(".") || "input"}: ${issue?.message ?? "invalid"}`, EXIT_BAD_INPUT);
    }
    if (err instanceof AppError) throw new CliFailure(`runwarden ${command}: ${err.message}`, err.code === "INVALID_INPUT" ? EXIT_BAD_INPUT : 1);
    throw err;
  } finally {
    if (database) {
      await db.$disconnect();
      await database.stop();
    }
  }
}
