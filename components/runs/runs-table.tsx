"use client";

import Link from "next/link";
import { useMemo } from "react";
import type { RouterOutputs } from "@/trpc/types";
import { Tooltip } from "../tooltip";
import { Badge, Empty, linkClass, RelativeTime, shortId, statusTone, TableWrap, tableClass, tdClass, thClass } from "../ui";
import type { inferParserType } from "nuqs";
import { serializeRunsSearch, type runsSearchParams } from "./search-params";

type Row = RouterOutputs["runs"]["list"]["items"][number];
type Values = inferParserType<typeof runsSearchParams>;

/** The URL of the runs list with these filters and a different failure code, from page one. */
export function withCode(values: Values, code: string): string {
  return `/runs${serializeRunsSearch({ ...values, code, cursor: null })}`;
}

/** The failure code, linking to its runs, with the catalogue's plain sentence on hover and focus. */
function CodeCell({ code, message, href }: { code: string; message: string | null; href: string }) {
  return (
    <Tooltip content={message ?? code}>
      {(trigger) => (
        <Link href={href} className={`${linkClass} font-mono text-xs`} data-testid="failure-code" {...trigger}>
          {code}
        </Link>
      )}
    </Tooltip>
  );
}

/** The table's columns. A plain list: the table neither sorts nor filters in the browser (the server pages it). */
function columns(values: Values): { header: string; cell: (r: Row) => React.ReactNode }[] {
  const mono = (text: string) => <span className="font-mono text-xs">{text}</span>;
  return [
    {
      header: "Run",
      cell: (r) => (
        <Link href={`/runs/${r.id}`} className={`${linkClass} font-mono text-xs`} title={r.id}>
          {shortId(r.id)}
        </Link>
      ),
    },
    { header: "Status", cell: (r) => <Badge tone={statusTone(r.status)}>{r.status}</Badge> },
    { header: "Outcome", cell: (r) => (r.outcome ? r.outcome.replace("_", " ") : "—") },
    { header: "Failure code", cell: (r) => (r.failureCode ? <CodeCell code={r.failureCode} message={r.failureMessage} href={withCode(values, r.failureCode)} /> : "—") },
    { header: "Owner", cell: (r) => r.owner },
    { header: "Company", cell: (r) => mono(r.companyId) },
    { header: "Task", cell: (r) => mono(r.taskId) },
    { header: "Agent", cell: (r) => r.agent },
    { header: "Provider", cell: (r) => r.provider },
    { header: "Target", cell: (r) => r.target },
    { header: "Attempts", cell: (r) => <span className="tabular-nums">{`${r.providerAttempts}/${r.maxProviderAttempts}`}</span> },
    { header: "Age", cell: (r) => <RelativeTime date={r.createdAt} /> },
  ];
}

export function RunsTable({ rows, values, filtered }: { rows: Row[]; values: Values; filtered: boolean }) {
  const cols = useMemo(() => columns(values), [values]);
  if (rows.length === 0) {
    return <Empty>{filtered ? "No runs match these filters." : "No runs yet. Submit one with `npm run -s runwarden -- run submit`."}</Empty>;
  }
  return (
    <TableWrap label="Runs">
      <table className={tableClass} data-testid="runs-table">
        <thead className="bg-zinc-50 dark:bg-zinc-900">
          <tr>
            {cols.map((c) => (
              <th key={c.header} scope="col" className={thClass}>
                {c.header}
              </th>
            ))}
          </tr>
        </thead>
        <tbody className="divide-y divide-zinc-100 dark:divide-zinc-800">
          {rows.map((row) => (
            <tr key={row.id} data-run-id={row.id} className="hover:bg-zinc-50 dark:hover:bg-zinc-900">
              {cols.map((c) => (
                <td key={c.header} className={tdClass}>
                  {c.cell(row)}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </TableWrap>
  );
}
