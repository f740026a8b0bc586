import { Command, CommanderError } from "commander";
import { COMMANDS } from "./commands";
import { CliFailure, EXIT_BAD_INPUT, type CliIO } from "./io";
import { oneLine } from "./one-line";

/** The `runwarden` program with every registered command. */
export function buildProgram(io: CliIO): Command {
  const program = new Command("runwarden")
    .description("Runwarden: the recovery console for AI-agent runs in remote sandboxes")
    // Throw instead of exiting so runCli owns the exit code; subcommands inherit both.
    .exitOverride()
    .configureOutput({ writeOut: io.stdout, writeErr: io.stderr });
  for (const register of COMMANDS) register(program, io);
  return program;
}

/** Runs the command line and returns the exit code; never throws. */
export async function runCli(argv: readonly string[], io: CliIO): Promise<number> {
  try {
    await buildProgram(io).parseAsync([...argv], { from: "user" });
    return 0;
  } catch (err) {
    if (err instanceof CliFailure) {
      io.stderr(`${oneLine(err.message)}\n`);
      return err.exitCode;
    }
    // Commander has already printed its message; usage mistakes are bad input too.
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : EXIT_BAD_INPUT;
    io.stderr(`runwarden: internal error: ${oneLine(err instanceof Error ? err.message : String(err))}\n`);
    return 1;
  }
}
