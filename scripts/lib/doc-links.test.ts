import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { checkCitations, citationsOf, codeFiles, commentsOf, ruleSections } from "./code-citations";
import { anchorsOf, checkLinks, linksOf, markdownFiles } from "./doc-links";

const repo = path.resolve(import.meta.dirname, "../..");

describe("the repository's Markdown links", () => {
  it("every link of every Markdown file resolves inside the repository", () => {
    const files = markdownFiles(repo);
    expect(files).toContain("README.md");
    expect(files).toContain("docs/rules.md");
    const report = checkLinks(repo, files);
    const listed = report.problems.map((p) => `${p.file}:${p.line} ${p.target} — ${p.problem}`).join("\n");
    expect(listed, `${report.problems.length} broken link(s)`).toBe("");
    // The count is reported with the issue's note; a docs tree with no links would check nothing.
    console.info(`doc links: ${report.links} links in ${report.files} Markdown files, all resolve`);
    expect(report.links).toBeGreaterThan(50);
  });
});

describe("the link check", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rw-links-"));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
  fs.mkdirSync(path.join(dir, "docs"));
  fs.writeFileSync(path.join(dir, "code.ts"), "export {};\n");
  fs.writeFileSync(path.join(dir, "docs", "b.md"), "# B\n\n## The `outage` rule\n\n## Twice\n\n## Twice\n\n<a id=\"kept\"></a>\n");
  const page = [
    "# A",
    "[ok file](../code.ts) [ok doc](b.md) [ok anchor](b.md#the-outage-rule) [second twice](b.md#twice-1) [html id](b.md#kept) [own](#a)",
    "[web](https://example.com/x) and a bare https://example.org too",
    "[escape](../../etc/passwd) [absolute](/etc/hosts) [missing](c.md) [bad anchor](b.md#nope) [anchor on code](../code.ts#L3)",
    "`[in code](nowhere.md)`",
    "```",
    "[in a block](nowhere.md)",
    "```",
    '<img src="missing.png">',
    "",
  ].join("\n");
  fs.writeFileSync(path.join(dir, "docs", "a.md"), page);

  it("finds links and images, not code, with their lines", () => {
    const links = linksOf(page);
    expect(links.map((l) => l.target)).not.toContain("nowhere.md");
    expect(links.find((l) => l.target === "https://example.org")?.line).toBe(3);
    expect(links.find((l) => l.target === "missing.png")?.line).toBe(9);
  });

  it("reads GitHub's anchors: code in a heading is its text, a repeat gets -1, an HTML id counts", () => {
    expect([...anchorsOf(fs.readFileSync(path.join(dir, "docs", "b.md"), "utf8"))].sort()).toEqual(["b", "kept", "the-outage-rule", "twice", "twice-1"]);
  });

  it("names each link that points out, leaves, is missing or names no heading", () => {
    const report = checkLinks(dir, ["docs/a.md"]);
    const byTarget = Object.fromEntries(report.problems.map((p) => [p.target, p.problem]));
    expect(Object.keys(byTarget).sort()).toEqual(
      ["https://example.com/x", "https://example.org", "../../etc/passwd", "/etc/hosts", "c.md", "b.md#nope", "../code.ts#L3", "missing.png"].sort(),
    );
    expect(byTarget["https://example.com/x"]).toMatch(/outside the repository/);
    expect(byTarget["../../etc/passwd"]).toBe("leaves the repository");
    expect(byTarget["c.md"]).toBe("names no file of the repository");
    expect(byTarget["b.md#nope"]).toBe("names no heading of docs/b.md");
    expect(report.links).toBe(14);
  });
});

/**
 * Citations that break the rule, each `file — cited`, while a change elsewhere fixes them (none
 * now). An entry that no longer matches fails the test too, so the list only shrinks.
 */
const KNOWN: string[] = [];

describe("the code's citations", () => {
  it("every file and docs/rules.md section a comment cites exists, and no comment cites an issue", () => {
    const files = codeFiles(repo);
    expect(files).toContain("server/engine/recovery-route.ts");
    expect(files).toContain("app/(console)/runs/page.tsx");
    const report = checkCitations(repo, files);
    const key = (p: { file: string; cited: string }) => `${p.file} — ${p.cited}`;
    const listed = report.problems
      .filter((p) => !KNOWN.includes(key(p)))
      .map((p) => `${p.file}:${p.line} ${p.cited} — ${p.problem}`)
      .join("\n");
    expect(listed, "broken citation(s) in code comments").toBe("");
    const stale = KNOWN.filter((k) => !report.problems.some((p) => key(p) === k));
    expect(stale, "known exceptions that no longer occur: remove them from KNOWN").toEqual([]);
    console.info(`code citations: ${report.citations} citations in ${report.comments} comments of ${report.files} files, ${report.problems.length} known exception(s)`);
    // A checker that found no comments or citations would pass on anything.
    expect(report.comments).toBeGreaterThan(1000);
    expect(report.citations).toBeGreaterThan(300);
  });
});

describe("the citation check", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rw-cites-"));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
  fs.mkdirSync(path.join(dir, "docs"));
  fs.mkdirSync(path.join(dir, "server", "engine"), { recursive: true });
  fs.writeFileSync(path.join(dir, "docs", "rules.md"), "# Rules\n\n## 1 Entities\n\n## 2 The proofs\n\n### 2.8 Recovery never loops\n\n### Turns\n");
  fs.writeFileSync(path.join(dir, "docs", "other.md"), "# Other\n");
  const source = [
    "// Cites docs/rules.md §2.8 and §1, docs/other.md, server/engine/ and ./b.ts.",
    'const url = "https://x/server/nowhere.ts // issue 9"; // issue 12 item 10',
    "const re = /\\/\\/ issue 3/;",
    "/**",
    " * Cites §2.9 (no such section), docs/rules.md §4, docs/other.md §7 (another page's), server/gone.ts,",
    " * ../../../outside.ts and server/engine/*.ts (a glob).",
    " */",
    "export const x = `${url} // issue 4 ${re.source}`;",
    "function f() {",
    "  return 1;",
    "  // before the closing brace: Issue 5",
    "}",
    "",
  ].join("\n");
  fs.writeFileSync(path.join(dir, "server", "engine", "a.ts"), source);
  fs.writeFileSync(path.join(dir, "server", "engine", "b.ts"), "export {};\n");

  it("reads comments, not strings, templates or regular expressions, with their lines", () => {
    const comments = commentsOf(source, "a.ts");
    expect(comments.map((c) => c.line)).toEqual([1, 2, 4, 11]);
    expect(comments.map((c) => c.text).join("\n")).not.toMatch(/issue [349]/);
  });

  it("takes a numbered heading of docs/rules.md as a section, and a sentence's full stop off a path", () => {
    expect([...ruleSections(fs.readFileSync(path.join(dir, "docs", "rules.md"), "utf8"))]).toEqual(["1", "2", "2.8"]);
    expect(citationsOf("see server/engine/a.ts. And (docs/other.md), app/(console)/runs/page.tsx")).toEqual({
      paths: ["server/engine/a.ts", "docs/other.md", "app/(console)/runs/page.tsx"],
      sections: [],
      issues: [],
    });
  });

  it("names each missing file, missing section and cited issue, on its line", () => {
    const report = checkCitations(dir, ["server/engine/a.ts"]);
    expect(report.problems.map((p) => `${p.line} ${p.cited} — ${p.problem.split(":")[0]}`)).toEqual([
      "2 issue 12 — cites an issue, which a clone does not have",
      "5 server/gone.ts — names no file of the repository",
      "6 ../../../outside.ts — leaves the repository",
      "5 §2.9 — names no section of docs/rules.md",
      "5 §4 — names no section of docs/rules.md",
      "11 Issue 5 — cites an issue, which a clone does not have",
    ]);
    expect(report.comments).toBe(4);
    // Six paths and two sections in the line comment and the block comment each; another page's section is not one.
    expect(report.citations).toBe(12);
  });
});
