/**
 * The repository's Markdown links: every one relative, resolving to a file of the repository
 * (and to a heading, when it names one). A clone is all a reader has, so nothing may point out.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import GithubSlugger from "github-slugger";
import { Lexer, Marked, type Token, type Tokens } from "marked";

export interface LinkProblem {
  file: string;
  line: number;
  target: string;
  problem: string;
}

export interface LinkReport {
  files: number;
  links: number;
  problems: LinkProblem[];
}

/** Every Markdown file git tracks or would track (not ignored), relative to root. */
export function markdownFiles(root: string): string[] {
  const out = execFileSync("git", ["ls-files", "--cached", "--others", "--exclude-standard", "-z", "--", "*.md"], { cwd: root, encoding: "utf8" });
  return out
    .split("\0")
    .filter((f) => f !== "" && fs.existsSync(path.join(root, f)))
    .sort();
}

const marked = new Marked({ gfm: true });

function plainText(tokens: Token[] | undefined): string {
  return (tokens ?? [])
    .map((t) => {
      if ("tokens" in t && Array.isArray(t.tokens) && t.tokens.length > 0) return plainText(t.tokens);
      if (t.type === "html") return "";
      return "text" in t && typeof t.text === "string" ? t.text : "";
    })
    .join("");
}

/** GitHub's anchors for a Markdown file: each heading's slug (repeats get -1, -2…) and any HTML id or name. */
export function anchorsOf(markdown: string): Set<string> {
  const slugger = new GithubSlugger();
  const anchors = new Set<string>();
  const tokens = Lexer.lex(markdown, { gfm: true });
  marked.walkTokens(tokens, (t) => {
    if (t.type === "heading") anchors.add(slugger.slug(plainText((t as Tokens.Heading).tokens)));
    if (t.type === "html") for (const m of t.raw.matchAll(/\b(?:id|name)="([^"]+)"/g)) if (m[1]) anchors.add(m[1]);
  });
  return anchors;
}

interface FoundLink {
  target: string;
  line: number;
}

/** The links and images of a Markdown text (code blocks and code spans are not links), with their lines. */
export function linksOf(markdown: string): FoundLink[] {
  const found: FoundLink[] = [];
  const tokens = Lexer.lex(markdown, { gfm: true });
  // A token knows its raw text, not its line: find each in the file from where the last one was.
  let from = 0;
  const lineAt = (raw: string) => {
    const at = markdown.indexOf(raw, from);
    if (at < 0) return markdown.slice(0, from).split("\n").length;
    from = at;
    return markdown.slice(0, at).split("\n").length;
  };
  marked.walkTokens(tokens, (t) => {
    if (t.type === "link" || t.type === "image") found.push({ target: (t as Tokens.Link).href, line: lineAt(t.raw) });
    else if (t.type === "html") for (const m of t.raw.matchAll(/\b(?:href|src)="([^"]+)"/g)) if (m[1]) found.push({ target: m[1], line: lineAt(t.raw) });
  });
  return found;
}

/** Checks every link of the given Markdown files (relative to root). */
export function checkLinks(root: string, files: string[]): LinkReport {
  const problems: LinkProblem[] = [];
  const anchorCache = new Map<string, Set<string>>();
  const anchorsIn = (abs: string) => {
    let a = anchorCache.get(abs);
    if (!a) anchorCache.set(abs, (a = anchorsOf(fs.readFileSync(abs, "utf8"))));
    return a;
  };
  let links = 0;
  for (const file of files) {
    const abs = path.join(root, file);
    for (const { target, line } of linksOf(fs.readFileSync(abs, "utf8"))) {
      links++;
      const problem = judgeLink(root, abs, target, anchorsIn);
      if (problem) problems.push({ file, line, target, problem });
    }
  }
  return { files: files.length, links, problems };
}

function judgeLink(root: string, from: string, target: string, anchorsIn: (abs: string) => Set<string>): string | null {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith("//")) return "points outside the repository (a clone is all a reader has: name the source as text)";
  if (target.startsWith("/")) return "is absolute: write it relative to this file";
  const hash = target.indexOf("#");
  const pathPart = decodeURIComponent(hash >= 0 ? target.slice(0, hash) : target);
  const anchor = hash >= 0 ? decodeURIComponent(target.slice(hash + 1)) : "";
  const resolved = pathPart === "" ? from : path.resolve(path.dirname(from), pathPart);
  const inside = path.relative(root, resolved);
  if (inside.startsWith("..") || path.isAbsolute(inside)) return "leaves the repository";
  if (!fs.existsSync(resolved)) return "names no file of the repository";
  if (anchor !== "") {
    if (!resolved.endsWith(".md")) return "has an anchor on a file that is not Markdown";
    if (!anchorsIn(resolved).has(anchor)) return `names no heading of ${path.relative(root, resolved)}`;
  }
  return null;
}
