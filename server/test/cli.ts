import type { Db } from "../db/client";
import type { CliIO } from "../cli/io";
import { runCli } from "../cli/program";

/** `runwarden …` in-process against a test database: its exit code and what it printed. */
export function inProcessCli(db: () => Db) {
  return async function cli(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
    const out: string[] = [];
    const err: string[] = [];
    const io: CliIO = {
      stdout: (s) => void out.push(s),
      stderr: (s) => void err.push(s),
      readStdin: () => Promise.resolve(""),
      readFile: () => Promise.reject(new Error("no files here")),
      db: db(),
    };
    const code = await runCli(argv, io);
    return { code, out: out.join(""), err: err.join("") };
  };
}
