import type { Check, Verdict } from "./verdicts";

function cell(value: Check["expected"]): string {
  if (value === undefined) return "";
  if (value === null) return "null";
  return String(value);
}

function table(rows: string[][]): string[] {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length))) ?? [];
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i] ?? 0))).join("  ").trimEnd());
}

/** A verdict as a person reads it: the checks as a table, then the decision. */
export function explainVerdict(v: Verdict): string {
  const rows = [
    ["#", "check", "expected", "actual", "result"],
    ...v.checks.map((c, i) => [String(i + 1), c.name, cell(c.expected), cell(c.actual), c.ok ? "pass" : "FAIL"]),
  ];
  const lines = [`proof: ${v.kind}`, "", ...table(rows), ""];
  const facts: [string, string][] = [
    ["verdict", v.verdict],
    ["code", v.code ?? "-"],
    ["reason", v.reason ?? "-"],
  ];
  if ("nextAction" in v) {
    facts.push(["next action", v.nextAction ?? "-"]);
    facts.push(["retry offered", v.canRetry ? "yes" : "no"]);
  }
  if ("retryAfterSeconds" in v && v.retryAfterSeconds !== null) facts.push(["retried after", `${v.retryAfterSeconds} s`]);
  if ("notBefore" in v && v.notBefore !== null) facts.push(["tried again at", v.notBefore]);
  if ("recoveryMode" in v && v.recoveryMode !== null) facts.push(["carries on as", v.recoveryMode]);
  if ("continuation" in v && v.continuation) facts.push(["then rests in", `${v.continuation.code}: ${v.continuation.nextAction}`]);
  if ("creatorVerdict" in v && v.creatorVerdict) facts.push(["creator", `${v.creatorVerdict.verdict} (${v.creatorVerdict.reason})`]);
  if ("claimerVerdict" in v && v.claimerVerdict) facts.push(["claimer", `${v.claimerVerdict.verdict} (${v.claimerVerdict.reason})`]);
  const width = Math.max(...facts.map(([k]) => k.length)) + 1;
  for (const [k, val] of facts) lines.push(`${`${k}:`.padEnd(width)} ${val}`);
  return `${lines.join("\n")}\n`;
}
