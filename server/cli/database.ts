import { CliFailure, EXIT_BAD_INPUT, type CliIO } from "./io";

type Db = import("../db/client").Db;
type Env = import("../env").Env;

/**
 * Opens the database for a subcommand that needs one (embedded or DATABASE_URL), and turns the
 * errors a person can fix into one line and an exit code. Everything is imported here, lazily,
 * so `decide` never loads the database or reads the environment.
 *
 * It never migrates (docs/operations.md, "Upgrades and migrations": only `npm run db:migrate`, a
 * starting controller and `npm start` do): a command of the next version run as a deploy gate
 * must not change the schema under the running one. A schema ahead of this version is said and
 * gone on with (expand steps only); one behind it is said, and a command that only reads
 * (`reads`) goes on while one that writes stops with what to run.
 */
export async function withCliDatabase(command: string, io: CliIO, fn: (db: Db, env: Env) => Promise<void>, options: { reads?: boolean } = {}): Promise<void> {
  const [{ env }, { openDatabase }, { schemaState }, { createDb }, { AppError }, { ZodError }] = await Promise.all([
    import("../env"),
    import("../db/embedded"),
    import("../db/schema-state"),
    import("../db/client"),
    import("../errors"),
    import("zod"),
  ]);
  const database = io.db ? null : await openDatabase({ env });
  const db = io.db ?? createDb(database!.url, { max: 2 });
  try {
    const schema = await schemaState(db);
    if (schema.ahead.length > 0) {
      io.stderr(`runwarden ${command}: the database has ${schema.ahead.length} migration(s) this version does not know (a newer version applied ${schema.ahead.at(-1)}); going on\n`);
    }
    if (schema.behind.length > 0) {
      const what = `the database's schema is ${schema.behind.length} migration(s) behind this version (first missing: ${schema.behind[0]})`;
      if (!options.reads) throw new CliFailure(`runwarden ${command}: ${what}: run npm run db:migrate first (or start a controller of this version)`, 1);
      io.stderr(`runwarden ${command}: ${what}; reading it as it is\n`);
    }
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
