import fs from "node:fs";
import path from "node:path";
import type { Command } from "commander";
import { describe, expect, it } from "vitest";
import type { CliIO } from "./io";
import { buildProgram } from "./program";

/**
 * docs/cli.md against the program `npm run -s runwarden` builds (server/cli/program.ts): every
 * command and every option it registers is named in the table, and the table names nothing the
 * program does not register. A command's rows are those whose first cell holds
 * `runwarden -- <command> <subcommand>` (alternatives written `a\|b`).
 */

const io: CliIO = { stdout: () => {}, stderr: () => {}, readStdin: () => Promise.resolve(""), readFile: () => Promise.resolve("") };

interface Leaf {
  path: string[];
  options: string[];
}

function leaves(command: Command, prefix: string[] = []): Leaf[] {
  return (command.commands as Command[]).flatMap((sub) => {
    const p = [...prefix, sub.name()];
    return sub.commands.length > 0 ? leaves(sub, p) : [{ path: p, options: sub.options.map((o) => o.long ?? o.flags) }];
  });
}

/** The first cell of each table row that shows a `runwarden --` command line. */
function commandCells(markdown: string): string[] {
  return markdown
    .split("\n")
    .filter((line) => line.startsWith("| "))
    .map((line) => line.slice(2).split(/ (?<!\\)\| /)[0] ?? "")
    .filter((cell) => cell.includes("runwarden -- "));
}

/** The command words each `runwarden -- …` of a cell names: two words at most, each a list of alternatives. */
function namedCommands(cell: string): string[][][] {
  return cell.split("runwarden -- ").slice(1).map((rest) => {
    const words = rest.split(/[\s`]/).filter(Boolean);
    const named: string[][] = [];
    for (const word of words.slice(0, 2)) {
      if (!/^[a-z][a-z-]*(\\\|[a-z][a-z-]*)*$/.test(word)) break;
      named.push(word.split("\\|"));
    }
    return named;
  });
}

const matches = (named: string[][], leafPath: string[]) => leafPath.every((word, i) => named[i]?.includes(word) ?? false);

const doc = fs.readFileSync(path.join(import.meta.dirname, "../../docs/cli.md"), "utf8");
const cells = commandCells(doc);
const program = buildProgram(io);
const all = leaves(program);

describe("docs/cli.md", () => {
  it("finds the program's commands and the table's rows (the walk itself works)", () => {
    expect(all.map((l) => l.path.join(" "))).toContain("run submit");
    expect(cells.length).toBeGreaterThan(5);
  });

  it.each(all.map((l) => [l.path.join(" "), l] as const))("names `%s` and every option it registers", (_name, leaf) => {
    const rows = cells.filter((cell) => namedCommands(cell).some((named) => matches(named, leaf.path)));
    expect(rows, `no row of docs/cli.md shows \`runwarden -- ${leaf.path.join(" ")}\``).not.toEqual([]);
    const text = rows.join("\n");
    const missing = leaf.options.filter((flag) => !new RegExp(`${flag.replace(/[-]/g, "\\-")}(?![a-z-])`).test(text));
    expect(missing, `options of \`${leaf.path.join(" ")}\` that docs/cli.md does not name`).toEqual([]);
  });

  it("names no command and no option the program does not register", () => {
    const known = new Map(all.map((leaf) => [leaf.path.join(" "), leaf]));
    const unknown: string[] = [];
    for (const cell of cells) {
      for (const named of namedCommands(cell)) {
        const paths = (named[1] ?? [""]).flatMap((second) => (named[0] ?? []).map((first) => [first, second].filter(Boolean).join(" ")));
        const found = paths.map((p) => known.get(p));
        paths.forEach((p, i) => void (found[i] ? null : unknown.push(`command ${p}`)));
        const flags = new Set(found.flatMap((leaf) => leaf?.options ?? []));
        for (const flag of cell.match(/--[a-z][a-z-]*/g) ?? []) if (!flags.has(flag)) unknown.push(`${flag} (${paths.join(", ")})`);
      }
    }
    expect(unknown).toEqual([]);
  });
});
