import { describe, expect, test } from "vitest";
import type { CliIO } from "./io";
import { runCli } from "./program";

/** In-process IO, to pin the exit-code contract without spawning. */
function fakeIO(files: Record<string, string>, stdin = "") {
  const out: string[] = [];
  const err: string[] = [];
  const io: CliIO = {
    stdout: (t) => void out.push(t),
    stderr: (t) => void err.push(t),
    readStdin: () => Promise.resolve(stdin),
    readFile: (p) => {
      const content = files[p];
      if (content === undefined) return Promise.reject(Object.assign(new Error(`ENOENT: ${p}`), { code: "ENOENT" }));
      return Promise.resolve(content);
    },
  };
  return { io, out, err };
}

describe("runCli", () => {
  test("decide prints the verdict and returns 0", async () => {
    const bundle = {
      kind: "process_exit",
      record: null,
      observer: { bootId: "b-2", pid: 2, startedAt: "2026-11-12T00:28:11.000Z", pidSpace: "ps" },
      probe: null,
    };
    const { io, out, err } = fakeIO({ "b.json": JSON.stringify(bundle) });
    expect(await runCli(["decide", "b.json"], io)).toBe(0);
    expect(err).toEqual([]);
    expect(JSON.parse(out.join(""))).toMatchObject({ kind: "process_exit", verdict: "unknown", reason: "unidentified" });
  });

  test("a directory or unreadable file is bad input", async () => {
    const { io, out, err } = fakeIO({});
    io.readFile = () => Promise.reject(Object.assign(new Error("EISDIR: illegal operation on a directory"), { code: "EISDIR" }));
    expect(await runCli(["decide", "somewhere"], io)).toBe(2);
    expect(out).toEqual([]);
    expect(err).toEqual(["runwarden decide: cannot read somewhere: is a directory\n"]);
  });

  test("a byte-order mark is tolerated", async () => {
    const { io, out, err } = fakeIO({}, `\uFEFF${JSON.stringify({ kind: "teardown_fence" })}`);
    expect(await runCli(["decide", "-"], io)).toBe(2);
    expect(out).toEqual([]);
    // Parsed as JSON: the complaint is about the bundle, not the encoding.
    expect(err).toEqual(["runwarden decide: evidence.now: expected string (missing)\n"]);
  });

  test("raw bytes of a bad file are printed escaped, never passed to the terminal", async () => {
    const { io, out, err } = fakeIO({ "bad.json": "\u001b]0;owned\u0007\u001b[31mred\u0000" });
    expect(await runCli(["decide", "bad.json"], io)).toBe(2);
    expect(out).toEqual([]);
    const line = err.join("");
    expect(line).toMatch(/^runwarden decide: not JSON: /);
    expect(line.slice(0, -1)).not.toMatch(/[\u0000-\u001f\u007f-\u009f]/);
    expect(line).toContain("\\x1b");
    expect(line.endsWith("\n")).toBe(true);
  });

  test("an unknown command is a usage error", async () => {
    const { io, out, err } = fakeIO({});
    expect(await runCli(["bogus"], io)).toBe(2);
    expect(out).toEqual([]);
    expect(err.join("")).toContain("unknown command 'bogus'");
  });

  test("a failing stdout is an internal error, exit 1", async () => {
    const { io, err } = fakeIO({}, '{"kind":"process_exit","observer":{"bootId":"b","pid":1,"startedAt":"2026-11-12T00:28:11Z","pidSpace":"p"}}');
    io.stdout = () => {
      throw new Error("EPIPE");
    };
    expect(await runCli(["decide", "-"], io)).toBe(1);
    expect(err).toEqual(["runwarden: internal error: EPIPE\n"]);
  });
});
