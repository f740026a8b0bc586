// The `runwarden` command. Imports nothing that opens the database or reads the environment
// at import time, so `runwarden decide` works anywhere, fast.
import { processIO } from "./io";
import { runCli } from "./program";

process.exitCode = await runCli(process.argv.slice(2), processIO);
