/**
 * Reading the service recipes out of a Markdown page (docs/operations.md): its fenced blocks, a
 * systemd unit as systemd reads it, a Dockerfile's CMD and HEALTHCHECK — so that a test runs
 * what the page says rather than a copy of it.
 */

export interface Fence {
  lang: string;
  body: string;
}

/** Every fenced block (```lang … ```) in order. */
export function fencedBlocks(markdown: string): Fence[] {
  return [...markdown.matchAll(/^```(\w*)[^\n]*\n([\s\S]*?)^```\s*$/gm)].map((m) => ({ lang: m[1] ?? "", body: m[2] ?? "" }));
}

export interface Unit {
  /** Every value of `key` in `section`, in order (Environment=, ExecStartPost= may repeat). */
  all(section: string, key: string): string[];
  /** The value systemd uses for a key set once or overridden: the last one. */
  last(section: string, key: string): string | undefined;
}

/** systemd.syntax(7), the parts a unit here uses: sections, `Key=value`, `#`/`;` comments, trailing `\` continuations. */
export function parseUnit(text: string): Unit {
  const entries: Array<{ section: string; key: string; value: string }> = [];
  let section = "";
  const lines = text.replace(/\\\n/g, " ").split("\n");
  for (const raw of lines) {
    const line = raw.trim();
    if (!line || line.startsWith("#") || line.startsWith(";")) continue;
    const header = /^\[(.+)\]$/.exec(line);
    if (header) {
      section = header[1]!;
      continue;
    }
    const eq = line.indexOf("=");
    if (eq < 0) throw new Error(`not a unit line: ${line}`);
    entries.push({ section, key: line.slice(0, eq).trim(), value: line.slice(eq + 1).trim() });
  }
  const all = (s: string, k: string) => entries.filter((e) => e.section === s && e.key === k).map((e) => e.value);
  return { all, last: (s, k) => all(s, k).at(-1) };
}

/** An Exec*= line as an argv: its prefixes (`-`, `@`, `+`, `!`, `:`) dropped, split on blanks (the recipes quote nothing). */
export function execArgv(value: string): string[] {
  if (/["'$%]/.test(value)) throw new Error(`quoting and expansions are not read here: ${value}`);
  return value.replace(/^[-@+!:]+/, "").trim().split(/\s+/);
}

/** `Environment=` values as variables (`A=1 B=2` on one line, or one per line). */
export function unitEnvironment(values: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const value of values) {
    for (const pair of value.split(/\s+/).filter(Boolean)) {
      const eq = pair.indexOf("=");
      if (eq > 0) out[pair.slice(0, eq)] = pair.slice(eq + 1);
    }
  }
  return out;
}

/** A systemd time span in seconds: `60`, `60s`, `1min`, `1min 30s`. */
export function timeSpanSeconds(value: string): number {
  const units: Record<string, number> = { "": 1, s: 1, sec: 1, m: 60, min: 60, h: 3600 };
  let total = 0;
  for (const m of value.matchAll(/(\d+)\s*([a-z]*)/g)) {
    const unit = units[m[2] ?? ""];
    if (unit === undefined) throw new Error(`time span unit not read here: ${value}`);
    total += Number(m[1]) * unit;
  }
  return total;
}

/**
 * Whether systemd counts a main process's end as a success (systemd.service(5), SuccessExitStatus=):
 * exit 0, death by SIGHUP, SIGINT, SIGTERM or SIGPIPE, or a status listed in SuccessExitStatus=.
 */
export function countsAsSuccess(exit: { code: number | null; signal: NodeJS.Signals | null }, successExitStatus: string[] = []): boolean {
  const listed = successExitStatus.flatMap((v) => v.split(/\s+/));
  if (exit.code !== null) return exit.code === 0 || listed.includes(String(exit.code));
  return ["SIGHUP", "SIGINT", "SIGTERM", "SIGPIPE"].includes(exit.signal ?? "") || listed.includes(exit.signal ?? "");
}

export interface Dockerfile {
  /** CMD in exec form (a JSON array). */
  cmd: string[];
  /** HEALTHCHECK's options (`--timeout` → "5s") and its shell-form command. */
  healthcheck: { options: Record<string, string>; command: string } | null;
  stopSignal: string | null;
}

/** The instructions a container recipe's stop and health depend on (the last of each wins, as in Docker). */
export function parseDockerfile(text: string): Dockerfile {
  const lines = text.replace(/\\\n/g, " ").split("\n").map((l) => l.trim());
  const last = (instruction: string) => lines.filter((l) => new RegExp(`^${instruction}\\s`, "i").test(l)).at(-1)?.replace(/^\S+\s+/, "");
  const cmd = last("CMD");
  if (!cmd?.startsWith("[")) throw new Error(`CMD is not in exec form: ${cmd}`);
  const check = last("HEALTHCHECK");
  let healthcheck: Dockerfile["healthcheck"] = null;
  if (check) {
    const at = check.search(/(^|\s)CMD\s/);
    if (at < 0) throw new Error(`HEALTHCHECK without CMD: ${check}`);
    const options: Record<string, string> = {};
    for (const m of check.slice(0, at).matchAll(/--([\w-]+)=(\S+)/g)) options[m[1]!] = m[2]!;
    healthcheck = { options, command: check.slice(at).replace(/^\s*CMD\s+/, "") };
  }
  return { cmd: JSON.parse(cmd) as string[], healthcheck, stopSignal: last("STOPSIGNAL") ?? null };
}

/** A Docker duration in seconds: `5s`, `3m`, `1m30s`. */
export function dockerSeconds(value: string): number {
  let total = 0;
  for (const m of value.matchAll(/(\d+)(ms|s|m|h)/g)) total += Number(m[1]) * { ms: 0.001, s: 1, m: 60, h: 3600 }[m[2] as "ms" | "s" | "m" | "h"];
  return total;
}
