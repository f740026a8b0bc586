"use client";

import { keepPreviousData, useQuery } from "@tanstack/react-query";
import Link from "next/link";
import type { ReactNode } from "react";
import { assertNever, type StuckReason } from "@/server/shared/engine";
import { LIVE } from "@/trpc/live";
import { useTRPC } from "@/trpc/react";
import type { RouterOutputs } from "@/trpc/types";
import { Badge, Empty, ErrorNotice, linkClass, Loading, Pager, RelativeTime, Section, shortId, statusTone, tableClass, TableHead, TableWrap, tdClass } from "../ui";
import { toStuckInput } from "./search-params";

type Output = RouterOutputs["runs"]["stuck"];
type Finding = Output["items"][number]["findings"][number];

/** How each reason is named in the filter, the overview's card and the table. */
export const STUCK_LABELS: Record<StuckReason, string> = {
  provider_wait: "Waiting on a provider outage",
  recovery_backoff: "In recovery back-off",
  executor_silent: "Executor silent",
  over_age: "Past the maximum age",
  turn_overdue: "Turn past its maximum duration",
};

/** "40 min", "12 h", "90 s". */
export function duration(ms: number): string {
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000} h`;
  if (ms >= 60_000) return `${Math.round(ms / 60_000)} min`;
  return `${Math.round(ms / 1000)} s`;
}

/** The proof that explains a finding, or the run's timeline when there is none yet (said so). */
function Explained({ runId, finding, fallback = "timeline" }: { runId: string; finding: Finding; fallback?: "timeline" | "turn-log" }) {
  if (finding.proof) {
    return (
      <Link href={`/runs/${runId}#proof-${finding.proof.id}`} className={`${linkClass} underline`} data-testid="stuck-proof">
        {finding.proof.kind} proof ({finding.proof.verdict})
      </Link>
    );
  }
  return (
    <>
      no proof yet:{" "}
      <Link href={`/runs/${runId}#${fallback}`} className={`${linkClass} underline`} data-testid="stuck-timeline">
        {fallback === "turn-log" ? "its turn log" : "its timeline"}
      </Link>
    </>
  );
}

function why(runId: string, f: Finding): ReactNode {
  switch (f.reason) {
    case "provider_wait":
      return (
        <>
          Since <RelativeTime date={f.since} />, nothing failed · <Explained runId={runId} finding={f} />
        </>
      );
    case "recovery_backoff":
      return (
        <>
          Recovery attempt {f.attempts} of {f.maxAttempts} failed; next <RelativeTime date={f.nextAttemptAt} />
          {f.lastError ? (
            <>
              {" "}
              (last error: <span className="font-mono text-xs break-all">{f.lastError}</span>)
            </>
          ) : null}{" "}
          · <Explained runId={runId} finding={f} />
        </>
      );
    case "executor_silent":
      return (
        <>
          Its controller <span className="font-mono text-xs">{shortId(f.executorBootId)}</span>{" "}
          {f.lastSeenAt ? (
            <>
              was last seen <RelativeTime date={f.lastSeenAt} />
            </>
          ) : (
            "has no record"
          )}{" "}
          and no one has taken it over · <Explained runId={runId} finding={f} />
        </>
      );
    case "over_age":
      return (
        <>
          Created <RelativeTime date={f.since} />, past the maximum age of {duration(f.limitMs)} · <Explained runId={runId} finding={f} />
        </>
      );
    case "turn_overdue":
      return (
        <>
          Turn {f.turn} running since <RelativeTime date={f.since} />, past {duration(f.limitMs)} · <Explained runId={runId} finding={f} fallback="turn-log" />
        </>
      );
    default:
      return assertNever(f);
  }
}

const HEADERS = ["Run", "Status", "Why it is stuck", "Company", "Task", "Age"] as const;

/** Stuck runs, each with every reason it is stuck and what explains it (docs/rules.md "Stuck runs"). */
export function StuckRunsTable({ rows }: { rows: Output["items"] }) {
  if (rows.length === 0) return <Empty>No run is stuck for this reason under these filters.</Empty>;
  return (
    <TableWrap label="Stuck runs">
      <table className={tableClass} data-testid="stuck-table">
        <TableHead columns={HEADERS} />
        <tbody className="divide-y divide-zinc-100 dark:divide-zinc-800">
          {rows.map((r) => (
            <tr key={r.id} data-run-id={r.id} className="hover:bg-zinc-50 dark:hover:bg-zinc-900">
              <td className={tdClass}>
                <Link href={`/runs/${r.id}`} className={`${linkClass} font-mono text-xs`} title={r.id}>
                  {shortId(r.id)}
                </Link>
              </td>
              <td className={tdClass}>
                <Badge tone={statusTone(r.status)}>{r.status}</Badge>
              </td>
              <td className={tdClass}>
                <ul className="flex flex-col gap-1">
                  {r.findings.map((f) => (
                    <li key={f.reason} data-testid="stuck-reason" data-reason={f.reason}>
                      <span className="font-medium">{STUCK_LABELS[f.reason]}.</span> {why(r.id, f)}
                    </li>
                  ))}
                </ul>
              </td>
              <td className={`${tdClass} font-mono text-xs`}>{r.companyId}</td>
              <td className={`${tdClass} font-mono text-xs`}>{r.taskId}</td>
              <td className={tdClass}>
                <RelativeTime date={r.createdAt} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableWrap>
  );
}

/** The runs page under the stuck filter: the stuck runs, how many for each reason, paged. */
export function StuckRunsPanel({ values, onPage }: { values: Parameters<typeof toStuckInput>[0]; onPage: (cursor: string | null) => void }) {
  const trpc = useTRPC();
  const stuck = useQuery({ ...trpc.runs.stuck.queryOptions(toStuckInput(values)), ...LIVE, placeholderData: keepPreviousData });
  const counts = stuck.data?.counts;
  const limits = stuck.data?.limits;
  return (
    <Section
      title="Stuck runs"
      id="stuck-runs"
      actions={
        counts ? (
          <p className="text-sm text-zinc-700 dark:text-zinc-300" data-testid="stuck-count" aria-live="polite">
            {counts[values.stuck ?? "any"]} stuck run{counts[values.stuck ?? "any"] === 1 ? "" : "s"} match
          </p>
        ) : null
      }
    >
      {limits ? (
        <p className="mb-3 text-xs text-zinc-700 dark:text-zinc-300">
          Silent: no heartbeat for {duration(limits.silenceWindowMs)} (the controllers&apos; window). Maximum age {duration(limits.maxAgeMs)}, maximum turn{" "}
          {duration(limits.maxTurnMs)} (RUNWARDEN_STUCK_MAX_AGE_MS, RUNWARDEN_STUCK_MAX_TURN_MS).
        </p>
      ) : null}
      {stuck.isPending ? (
        <Loading label="Loading stuck runs…" />
      ) : stuck.isError ? (
        <ErrorNotice title="Could not load the stuck runs." error={stuck.error} />
      ) : (
        <>
          <StuckRunsTable rows={stuck.data.items} />
          <Pager cursor={values.cursor} nextCursor={stuck.data.nextCursor} onPage={onPage} />
        </>
      )}
    </Section>
  );
}
