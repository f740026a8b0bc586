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

/**
 * `runwarden decide FILE`: the verdict of one evidence bundle (docs/evidence.md), or of each
 * bundle of a JSON array (the console's "Download evidence" file), one line per bundle in
 * the array's order. Every bundle is validated before any verdict is printed, so a bad one
 * is named by its position and nothing half-printed is left to misread.
 */
export function registerDecide(program: Command, io: CliIO): void {
  program
    .command("decide")
    .description("evaluate an evidence bundle (or a JSON array of them) and print each verdict as one JSON line")
    .argument("<file>", "evidence bundle as JSON (or an array of bundles), or - for standard input")
    .option("--explain", "print the checks as a table for a person instead of JSON")
    .action(async (file: string, opts: { explain?: boolean }) => {
      const input = await readBundle(file, io);
      const many = Array.isArray(input);
      const bundles: unknown[] = many ? input : [input];
      if (bundles.length === 0) fail("empty array: expected at least one evidence bundle");
      const verdicts = bundles.map((bundle, i) => {
        const result = safeDecide(bundle);
        if (!result.ok) fail(many ? `bundle ${i + 1} of ${bundles.length}: ${result.error.message}` : result.error.message);
        return result.verdict;
      });
      if (!opts.explain) {
        io.stdout(verdicts.map((v) => `${JSON.stringify(v)}\n`).join(""));
        return;
      }
      io.stdout(verdicts.map((v, i) => (many ? `bundle ${i + 1} of ${verdicts.length}\n${explainVerdict(v)}` : explainVerdict(v))).join("\n"));
    });
}
