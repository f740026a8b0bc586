import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
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
    // The count is reported with the note; a docs tree with no links would check nothing.
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
