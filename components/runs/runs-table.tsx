"use client";

import { createColumnHelper, tableFeatures, useTable } from "@tanstack/react-table";
import Link from "next/link";
import { useMemo } from "react";
import { Tooltip } from "radix-ui";
import type { RouterOutputs } from "@/trpc/types";
import { Badge, Empty, linkClass, RelativeTime, shortId, statusTone, TableWrap, tableClass, tdClass, thClass } from "../ui";
import type { inferParserType } from "nuqs";
import { serializeRunsSearch, type runsSearchParams } from "./search-params";

type Row = RouterOutputs["runs"]["list"]["items"][number];
type Values = inferParserType<typeof runsSearchParams>;

const features = tableFeatures({});
const helper = createColumnHelper<typeof features, Row>();

/** The URL of the runs list with these filters and a different failure code, from page one. */
export function withCode(values: Values, code: string): string {
  return `/runs${serializeRunsSearch({ ...values, code, cursor: null })}`;
}

/** The failure code, linking to its runs, with the catalogue's plain sentence on hover and focus. */
function CodeCell({ code, message, href }: { code: string; message: string | null; href: string }) {
  return (
    <Tooltip.Root>
      <Tooltip.Trigger asChild>
        <Link href={href} className={`${linkClass} font-mono text-xs`} data-testid="failure-code">
          {code}
        </Link>
      </Tooltip.Trigger>
      <Tooltip.Portal>
        <Tooltip.Content sideOffset={4} className="z-50 max-w-sm rounded bg-zinc-900 px-3 py-2 text-sm text-white shadow-lg dark:bg-zinc-100 dark:text-zinc-900">
          {message ?? code}
          <Tooltip.Arrow className="fill-zinc-900 dark:fill-zinc-100" />
        </Tooltip.Content>
      </Tooltip.Portal>
    </Tooltip.Root>
  );
}

function columns(values: Values) {
  return helper.columns([
    helper.accessor("id", {
      header: "Run",
      cell: (c) => (
        <Link href={`/runs/${c.getValue()}`} className={`${linkClass} font-mono text-xs`} title={c.getValue()}>
          {shortId(c.getValue())}
        </Link>
      ),
    }),
    helper.accessor("status", { header: "Status", cell: (c) => <Badge tone={statusTone(c.getValue())}>{c.getValue()}</Badge> }),
    helper.accessor("outcome", { header: "Outcome", cell: (c) => (c.getValue() ? c.getValue()!.replace("_", " ") : "—") }),
    helper.accessor("failureCode", {
      header: "Failure code",
      cell: (c) => {
        const code = c.getValue();
        return code ? <CodeCell code={code} message={c.row.original.failureMessage} href={withCode(values, code)} /> : "—";
      },
    }),
    helper.accessor("owner", { header: "Owner" }),
    helper.accessor("companyId", { header: "Company", cell: (c) => <span className="font-mono text-xs">{c.getValue()}</span> }),
    helper.accessor("taskId", { header: "Task", cell: (c) => <span className="font-mono text-xs">{c.getValue()}</span> }),
    helper.accessor("agent", { header: "Agent" }),
    helper.accessor("provider", { header: "Provider" }),
    helper.accessor("target", { header: "Target" }),
    helper.accessor((r) => `${r.providerAttempts}/${r.maxProviderAttempts}`, { id: "attempts", header: "Attempts", cell: (c) => <span className="tabular-nums">{c.getValue()}</span> }),
    helper.accessor("createdAt", { header: "Age", cell: (c) => <RelativeTime date={c.getValue()} /> }),
  ]);
}

export function RunsTable({ rows, values, filtered }: { rows: Row[]; values: Values; filtered: boolean }) {
  const cols = useMemo(() => columns(values), [values]);
  const table = useTable({ features, columns: cols, data: rows, getRowId: (r) => r.id });
  if (rows.length === 0) {
    return <Empty>{filtered ? "No runs match these filters." : "No runs yet. Submit one with `npm run -s runwarden -- run submit`."}</Empty>;
  }
  return (
    <TableWrap label="Runs">
      <table className={tableClass} data-testid="runs-table">
        <thead className="bg-zinc-50 dark:bg-zinc-900">
          {table.getHeaderGroups().map((group) => (
            <tr key={group.id}>
              {group.headers.map((header) => (
                <th key={header.id} scope="col" className={thClass}>
                  {header.isPlaceholder ? null : <table.FlexRender header={header} />}
                </th>
              ))}
            </tr>
          ))}
        </thead>
        <tbody className="divide-y divide-zinc-100 dark:divide-zinc-800">
          {table.getRowModel().rows.map((row) => (
            <tr key={row.id} data-run-id={row.id} className="hover:bg-zinc-50 dark:hover:bg-zinc-900">
              {row.getAllCells().map((cell) => (
                <td key={cell.id} className={tdClass}>
                  <table.FlexRender cell={cell} />
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </TableWrap>
  );
}
