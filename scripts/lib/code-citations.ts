/**
 * What the code's comments point a newcomer at must be there: a cited file of the repository
 * exists, a cited `§N.M` is a section of docs/rules.md (ARCHITECTURE.md: "Code comments cite a rule
 * by its section there"), and no comment cites an issue, which a clone does not have
 * (docs/decisions/0002-comments-cite-what-a-clone-has.md). The Markdown side is doc-links.ts.
 */
import fs from "node:fs";
import path from "node:path";
import ts from "typescript";

export interface CitationProblem {
  file: string;
  line: number;
  cited: string;
  problem: string;
}

export interface CitationReport {
  files: number;
  comments: number;
  /** File paths and rule sections the comments cite, each counted where it is cited. */
  citations: number;
  problems: CitationProblem[];
}

/** The code a newcomer reads: these folders and the root's own source files. */
export const CODE_ROOTS = ["app", "components", "e2e", "lib", "lint", "runner", "scripts", "server", "trpc", "types"];
const CODE_EXT = /\.(?:ts|tsx|mts|cts|js|mjs|cjs)$/;
/** Written by tools, not people (prisma generate, Next's own file). */
const SKIP = /(?:^|\/)(?:node_modules|generated|\.next)(?:\/|$)|^next-env\.d\.ts$/;

/** Every source file of the code roots and the repository's root, relative to root, sorted. */
export function codeFiles(root: string): string[] {
  const out: string[] = [];
  const walk = (rel: string) => {
    for (const d of fs.readdirSync(path.join(root, rel), { withFileTypes: true })) {
      const p = rel === "" ? d.name : `${rel}/${d.name}`;
      if (SKIP.test(p)) continue;
      if (d.isDirectory()) {
        if (rel !== "") walk(p);
        else if (CODE_ROOTS.includes(d.name)) walk(p);
      } else if (d.isFile() && CODE_EXT.test(d.name)) out.push(p);
    }
  };
  walk("");
  return out.sort();
}

export interface FoundComment {
  text: string;
  line: number;
}

/**
 * The comments of a source file with the line each starts on. Read by TypeScript's own parser,
 * so `//` in a string, a template or a regular expression is not a comment.
 */
export function commentsOf(source: string, fileName = "file.tsx"): FoundComment[] {
  const kind = /\.(?:tsx|jsx)$/.test(fileName) ? ts.ScriptKind.TSX : /\.(?:m|c)?js$/.test(fileName) ? ts.ScriptKind.JS : ts.ScriptKind.TS;
  const sf = ts.createSourceFile(fileName, source, ts.ScriptTarget.Latest, false, kind);
  const seen = new Set<number>();
  const found: FoundComment[] = [];
  const take = (ranges: ts.CommentRange[] | undefined) => {
    for (const r of ranges ?? []) {
      if (seen.has(r.pos)) continue;
      seen.add(r.pos);
      found.push({ text: source.slice(r.pos, r.end), line: sf.getLineAndCharacterOfPosition(r.pos).line + 1 });
    }
  };
  // Every comment is trivia before some token (or the end of the file): visit the tokens too,
  // not only the nodes, or a comment before a closing brace would be missed.
  const visit = (node: ts.Node) => {
    take(ts.getLeadingCommentRanges(source, node.pos));
    take(ts.getTrailingCommentRanges(source, node.end));
    if (node.kind === ts.SyntaxKind.JsxText) return;
    for (const child of node.getChildren(sf)) visit(child);
  };
  visit(sf);
  return found.sort((a, b) => a.line - b.line);
}

/** The sections of docs/rules.md a comment may cite: each numbered heading's number. */
export function ruleSections(rulesMarkdown: string): Set<string> {
  const sections = new Set<string>();
  for (const m of rulesMarkdown.matchAll(/^#{1,6} (\d+(?:\.\d+)*) /gm)) if (m[1]) sections.add(m[1]);
  return sections;
}

// A path from a folder of the repository's root, or relative to the file (`./`, `../`). Globs
// (`sweeps/*.ts`) and placeholders (`NNNN-title.md`) are patterns, not citations.
const ROOTED = ["app", "components", "docs", "e2e", "lib", "lint", "prisma", "public", "runner", "scripts", "server", "trpc", "types"];
const PATH_RE = new RegExp(String.raw`(?<![\w./@-])((?:\.\.?/)+[\w.()\[\]@-]+(?:/[\w.()\[\]@-]+)*|(?:${ROOTED.join("|")})/(?:[\w.()\[\]@-]+/)*[\w.()\[\]@-]*)`, "g");
const FILE_EXT = /\.(?:ts|tsx|mts|cts|js|mjs|cjs|md|json|sql|prisma|snapshot|toml|ya?ml|sh|css|svg|png)$/;
const SECTION_RE = /§\s?(\d+(?:\.\d+)*)/g;
const ISSUE_RE = /\bissues? #?\d+/gi;

/** What one comment cites: paths (as written) and rule sections, with the issues it names. */
export function citationsOf(comment: string): { paths: string[]; sections: string[]; issues: string[] } {
  const paths: string[] = [];
  for (const m of comment.matchAll(PATH_RE)) {
    const raw = m[1] ?? "";
    // A sentence's full stop or a closing bracket after a path is not part of it.
    let p = raw;
    while (!FILE_EXT.test(p) && !p.endsWith("/") && /[.)\]]$/.test(p)) p = p.slice(0, -1);
    const after = comment.slice((m.index ?? 0) + raw.length);
    if (/^[*{]/.test(after) || /NNNN|[*{}]/.test(p)) continue;
    // A file (by its extension) or a folder (by its trailing slash); a bare word such as
    // `server/` in prose is still a folder and must exist.
    if (FILE_EXT.test(p) || p.endsWith("/")) paths.push(p);
  }
  const sections: string[] = [];
  for (const m of comment.matchAll(SECTION_RE)) {
    // `docs/evidence.md §3` is another page's section; a bare § or `docs/rules.md §` is the rules'.
    const before = comment.slice(0, m.index).match(/([\w./-]+\.md)\s*$/);
    if (before && !before[1]!.endsWith("rules.md")) continue;
    sections.push(m[1] ?? "");
  }
  const issues = [...comment.matchAll(ISSUE_RE)].map((m) => m[0]);
  return { paths, sections, issues };
}

/** Checks every comment of the given source files (relative to root). */
export function checkCitations(root: string, files: string[]): CitationReport {
  const sections = ruleSections(fs.readFileSync(path.join(root, "docs/rules.md"), "utf8"));
  const problems: CitationProblem[] = [];
  let comments = 0;
  let citations = 0;
  for (const file of files) {
    const source = fs.readFileSync(path.join(root, file), "utf8");
    for (const c of commentsOf(source, file)) {
      comments++;
      const cited = citationsOf(c.text);
      // A citation's line is the comment's start plus the lines before it in the comment.
      const lineOf = (s: string) => c.line + c.text.slice(0, Math.max(0, c.text.indexOf(s))).split("\n").length - 1;
      for (const p of cited.paths) {
        citations++;
        const abs = p.startsWith(".") ? path.resolve(root, path.dirname(file), p) : path.join(root, p);
        const inside = path.relative(root, abs);
        if (inside.startsWith("..") || path.isAbsolute(inside)) problems.push({ file, line: lineOf(p), cited: p, problem: "leaves the repository" });
        else if (!fs.existsSync(abs)) problems.push({ file, line: lineOf(p), cited: p, problem: "names no file of the repository" });
      }
      for (const s of cited.sections) {
        citations++;
        if (!sections.has(s)) problems.push({ file, line: lineOf(`§${s}`), cited: `§${s}`, problem: "names no section of docs/rules.md" });
      }
      for (const i of cited.issues) {
        problems.push({ file, line: lineOf(i), cited: i, problem: "cites an issue, which a clone does not have: cite docs/rules.md §N.M, a docs page, a decision record or a file" });
      }
    }
  }
  return { files: files.length, comments, citations, problems };
}
