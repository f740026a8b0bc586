import { readFile } from "node:fs/promises";
import type { Db } from "../db/client";

/**
 * Everything a command touches outside itself, so commands can be run in-process in tests
 * and the entry point stays a few lines.
 */
export interface CliIO {
  stdout(text: string): void;
  stderr(text: string): void;
  readStdin(): Promise<string>;
  readFile(path: string): Promise<string>;
  /** A database already open (tests pass their own); without it a command opens the configured one. */
  db?: Db;
}

/** A command's failure: one line on standard error and this exit code. */
export class CliFailure extends Error {
  override name = "CliFailure";
  constructor(
    message: string,
    public readonly exitCode: number,
  ) {
    super(message);
  }
}

/** Exit code for input that does not fit the contract (docs/evidence.md). */
export const EXIT_BAD_INPUT = 2;

async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === "string" ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks).toString("utf8");
}

export const processIO: CliIO = {
  stdout: (text) => void process.stdout.write(text),
  stderr: (text) => void process.stderr.write(text),
  readStdin: () => readAll(process.stdin),
  readFile: (path) => readFile(path, "utf8"),
};
