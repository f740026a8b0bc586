import type { Command } from "commander";
import { ZodError } from "zod";
import { withCliDatabase } from "../database";
import { CliFailure, EXIT_BAD_INPUT, type CliIO } from "../io";

type RunListOutput = import("../../runs/queries").RunListOutput;
type RunDetail = import("../../runs/detail").RunDetail;

/**
 * `runwarden run list` and `runwarden run show RUN_ID`: the runs page and the run page read
 * through the same functions runs.list and runs.get call (server/trpc/routers/runs.ts:
 * `listRuns`, `getRunDetail`), as this machine's operator (every company). Reads only: a
 * schema behind this version is said and read as it is (server/cli/database.ts).
 */

interface ListOptions {
  status?: string;
  outcome?: string;
  failureCode?: string;
  company?: string;
  provider?: string;
  target?: string;
  range?: string;
  createdFrom?: string;
  createdTo?: string;
  search?: string;
  cursor?: string;
  limit: string;
  json?: boolean;
}

/** The list input's fields under the options that set them, so a refusal names what the person typed. */
const OPTION_OF: Record<string, string> = {
  status: "--status",
  outcome: "--outcome",
  failureCode: "--failure-code",
  companyId: "--company",
  provider: "--provider",
  target: "--target",
  range: "--range",
  createdFrom: "--created-from",
  createdTo: "--created-to",
  search: "--search",
  cursor: "--cursor",
  pageSize: "--limit",
};

function asDate(text: string | undefined): Date | undefined {
  // An unreadable date is an Invalid Date, which the list's own schema refuses (naming the option).
  return text === undefined ? undefined : new Date(text);
}

export function registerRunRead(run: Command, io: CliIO): void {
  run
    .command("list")
    .description("the runs, newest first, under the dashboard's filters, one page at a time")
    .option("--status <status>", "only runs in this status")
    .option("--outcome <outcome>", "only runs with this outcome class")
    .option("--failure-code <code>", "only runs with this failure code")
    .option("--company <id>", "only this company's runs")
    .option("--provider <name>", "only runs of this AI provider")
    .option("--target <target>", "only runs on this execution target (local or remote)")
    .option("--range <range>", "only runs created in the last 1h, 24h, 7d or 30d")
    .option("--created-from <date>", "only runs created at or after this date (ISO 8601)")
    .option("--created-to <date>", "only runs created at or before this date (ISO 8601)")
    .option("--search <text>", "a whole run id, or part of a task id")
    .option("--cursor <cursor>", "the next page: the cursor the previous page printed")
    .option("--limit <n>", "runs per page (5 to 100)", "25")
    .option("--json", "print the list's own output (items and nextCursor) as JSON")
    .action(async (opts: ListOptions) => {
      await withCliDatabase(
        "run list",
        io,
        async (db) => {
          const { listRuns } = await import("../../runs/queries");
          const input = {
            status: opts.status,
            outcome: opts.outcome,
            failureCode: opts.failureCode,
            companyId: opts.company,
            provider: opts.provider,
            target: opts.target,
            range: opts.range,
            createdFrom: asDate(opts.createdFrom),
            createdTo: asDate(opts.createdTo),
            search: opts.search,
            cursor: opts.cursor,
            pageSize: Number(opts.limit),
          } as import("../../runs/queries").RunListInput;
          // The machine's operator reads every company, as the CLI's other commands act without --as.
          const page = await listRuns(db, { all: true }, input).catch((err: unknown) => {
            if (!(err instanceof ZodError)) throw err;
            const issue = err.issues[0];
            const field = String(issue?.path[0] ?? "input");
            throw new CliFailure(`runwarden run list: ${OPTION_OF[field] ?? field}: ${issue?.message ?? "invalid"}`, EXIT_BAD_INPUT);
          });
          io.stdout(opts.json ? `${JSON.stringify(page)}\n` : listText(page));
        },
        { reads: true },
      );
    });

  run
    .command("show")
    .description("one run as its page shows it: status, failure code and owner, the catalogue's reason, whether Retry is offered, its successor, its proofs and their checks")
    .argument("<runId>", "the run")
    .option("--json", "print the run page's whole read (runs.get's output) as JSON")
    .action(async (runId: string, opts: { json?: boolean }) => {
      await withCliDatabase(
        "run show",
        io,
        async (db) => {
          const { getRunDetail, runIdInput } = await import("../../runs/detail");
          // The same input contract as runs.get: a malformed id is bad input (exit 2), an unknown one not found (exit 1).
          const { id } = runIdInput.parse({ id: runId });
          const detail = await getRunDetail(db, { all: true }, id);
          io.stdout(opts.json ? `${JSON.stringify(detail)}\n` : showText(detail));
        },
        { reads: true },
      );
    });
}

/** Columns padded to their widest cell; the last one is not padded. */
function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!))).join("  ").trimEnd()).join("\n") + "\n";
}

function listText(page: RunListOutput): string {
  if (page.items.length === 0) return "no runs match\n";
  const rows = [
    ["RUN", "STATUS", "COMPANY", "TASK", "CODE", "OWNER", "RETRY", "CREATED"],
    ...page.items.map((r) => [r.id, r.status, r.companyId, r.taskId, r.failureCode ?? "-", r.owner, r.canRetry ? "yes" : "no", r.createdAt.toISOString()]),
  ];
  return table(rows) + (page.nextCursor ? `next page: --cursor ${page.nextCursor}\n` : "");
}

function retryText(d: RunDetail): string {
  const successor = d.lineage.next[0];
  if (d.retry.successorId) return `already retried as ${d.retry.successorId}${successor ? ` (${successor.status})` : ""}`;
  return d.retry.blocker === null ? "offered" : `not offered: ${d.retry.blocker}`;
}

function showText(d: RunDetail): string {
  const r = d.run;
  const lines = [
    `run ${r.id}: ${r.status}${r.outcome ? ` (${r.outcome})` : ""}`,
    `company ${r.companyId}, task ${r.taskId}, agent ${r.agent}, provider ${r.provider}, ${r.target}, ${r.sandboxMode}`,
    `failure code: ${r.failureCode ?? "none"}`,
    `owner: ${r.owner}`,
    // The catalogue's sentence for the code, as the run page shows it.
    ...(d.failure ? [`reason: ${d.failure.message}`, `next action: ${d.failure.nextAction}`] : []),
    ...(r.failureDetail ? [`detail: ${r.failureDetail}`] : []),
    ...(r.cancelledBy ? [`cancelled by ${r.cancelledBy}${r.cancelReason ? `: ${r.cancelReason}` : ""}`] : []),
    `retry: ${retryText(d)}`,
    `successor: ${d.retry.successorId ?? "none"}`,
    ...(d.retry.current && d.retry.current.hops > 1 ? [`current run of the task: ${d.retry.current.id} (${d.retry.current.status}, ${d.retry.current.hops} retries on)`] : []),
    ...(d.lineage.previous.length ? [`retries: ${d.lineage.previous.at(-1)!.id}`] : []),
    `proofs: ${d.proofs.length}`,
  ];
  for (const p of d.proofs) {
    lines.push(`  proof ${p.id}: ${p.kind} → ${p.verdict}${p.code ? ` (${p.code})` : ""}, evaluated ${p.evaluatedAt.toISOString()} by ${p.evaluatedBy}`);
    if (p.reason) lines.push(`    reason: ${p.reason}`);
    if (p.checks === null) lines.push(`    checks (not a list of checks, as stored): ${JSON.stringify(p.checksRaw)}`);
    for (const c of p.checks ?? []) {
      const values = [c.expected === undefined ? null : `expected ${JSON.stringify(c.expected)}`, c.actual === undefined ? null : `actual ${JSON.stringify(c.actual)}`].filter(Boolean).join(", ");
      lines.push(`    ${c.ok ? "ok  " : "FAIL"} ${c.name}${values ? `: ${values}` : ""}`);
    }
  }
  return `${lines.join("\n")}\n`;
}
