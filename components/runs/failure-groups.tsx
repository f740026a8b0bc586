"use client";

import Link from "next/link";
import type { inferParserType } from "nuqs";
import type { RouterOutputs } from "@/trpc/types";
import { Badge, Empty, linkClass, RelativeTime } from "../ui";
import { BulkAction } from "./bulk-action";
import { withCode } from "./runs-table";
import { toRunFilter } from "./search-params";
import type { runsSearchParams } from "./search-params";

type Group = RouterOutputs["runs"]["failureGroups"][number];

/** Failures grouped by code, most frequent first, each one click from its runs. */
export function FailureGroups({ groups, values }: { groups: Group[]; values: inferParserType<typeof runsSearchParams> }) {
  if (groups.length === 0) return <Empty>No failures under these filters.</Empty>;
  return (
    <ul className="grid gap-3 md:grid-cols-2" data-testid="failure-groups">
      {groups.map((g) => (
        <li key={g.code} className="rounded border border-zinc-200 p-4 dark:border-zinc-800">
          <div className="flex flex-wrap items-baseline justify-between gap-2">
            <Link href={withCode(values, g.code)} className={`${linkClass} font-mono text-sm break-all`} aria-label={`${g.count} runs with ${g.code}`}>
              {g.code}
            </Link>
            <span className="text-2xl font-semibold tabular-nums">{g.count}</span>
          </div>
          <p className="mt-2 text-sm">{g.message}</p>
          <p className="mt-1 text-sm text-zinc-700 dark:text-zinc-300">{g.nextAction}</p>
          {g.canRetry && g.open > 0 ? (
            <div className="mt-3">
              <BulkAction
                kind="retry"
                // The group's runs under the page's other filters, as the group counted them.
                filter={{ ...toRunFilter(values), failureCode: g.code }}
                label={`Retry all ${g.open} with ${g.code}`}
                title={`Retry the runs with ${g.code}`}
              />
            </div>
          ) : null}
          <div className="mt-3 flex flex-wrap items-center gap-2 text-xs text-zinc-700 dark:text-zinc-300">
            <Badge tone={g.outcome === "terminal_failure" ? "bad" : "warn"}>{g.outcome.replace("_", " ")}</Badge>
            <Badge>owner: {g.owner}</Badge>
            {g.canRetry ? <Badge tone="info">Retry offered</Badge> : <Badge>no Retry</Badge>}
            {!g.known ? <Badge tone="warn">unknown code</Badge> : null}
            <span>
              {g.open} awaiting action · last <RelativeTime date={g.lastAt} />
            </span>
          </div>
        </li>
      ))}
    </ul>
  );
}
