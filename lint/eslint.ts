import path from "node:path";
import { ESLint } from "eslint";

/**
 * One ESLint for the lint rules' own tests (lint/*.test.ts): the project's real
 * eslint.config.mjs, linting a snippet as if it were the file at `file` (relative to the root).
 */
export const ROOT = path.resolve(import.meta.dirname, "..");
let eslint: ESLint | null = null;

export async function lintAt(file: string, code: string): Promise<ESLint.LintResult["messages"]> {
  eslint ??= new ESLint({ cwd: ROOT, overrideConfigFile: path.join(ROOT, "eslint.config.mjs") });
  const [result] = await eslint.lintText(code, { filePath: path.join(ROOT, file) });
  if (!result) throw new Error("ESLint returned no result");
  return result.messages;
}

/** The first lint loads the TypeScript project (half a minute on a loaded machine): call it in a hook. */
export async function warmLint(): Promise<void> {
  await lintAt("server/db/warm.ts", "export const warm = 1;\n");
}
