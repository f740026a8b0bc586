import type { Command } from "commander";
import { explainVerdict, safeDecide } from "../../engine";
import { CliFailure, EXIT_BAD_INPUT, type CliIO } from "../io";

const PREFIX = "runwarden decide";

function fail(problem: string): never {
  throw new CliFailure(`${PREFIX}: ${problem}`, EXIT_BAD_INPUT);
}

function readProblem(err: unknown): string {
  const code = typeof err === "object" && err !== null && "code" in err ? String(err.code) : "";
  switch (code) {
    case "ENOENT":
      return "no such file";
    case "EISDIR":
      return "is a directory";
    case "EACCES":
      return "permission denied";
    default:
      return err instanceof Error ? err.message : String(err);
  }
}

async function readBundle(file: string, io: CliIO): Promise<unknown> {
  let text: string;
  try {
    text = file === "-" ? await io.readStdin() : await io.readFile(file);
  } catch (err) {
    fail(`cannot read ${file === "-" ? "standard input" : file}: ${readProblem(err)}`);
  }
  text = text.replace(/^\uFEFF/, "");
  if (text.trim() === "") fail("empty input: expected an evidence bundle as JSON");
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    fail(`not JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** `runwarden decide FILE`: the verdict of one evidence bundle (EVIDENCE.md). */
export function registerDecide(program: Command, io: CliIO): void {
  program
    .command("decide")
    .description("evaluate an evidence bundle and print its verdict as one JSON line")
    .argument("<file>", "evidence bundle as JSON, or - for standard input")
    .option("--explain", "print the checks as a table for a person instead of JSON")
    .action(async (file: string, opts: { explain?: boolean }) => {
      const bundle = await readBundle(file, io);
      const result = safeDecide(bundle);
      if (!result.ok) fail(result.error.message);
      io.stdout(opts.explain ? explainVerdict(result.verdict) : `${JSON.stringify(result.verdict)}\n`);
    });
}
