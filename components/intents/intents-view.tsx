"use client";

import { keepPreviousData, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { useQueryStates } from "nuqs";
import { useRef } from "react";
import { toast } from "../toast";
import { LIVE, useLiveRefetch } from "@/trpc/live";
import { useTRPC } from "@/trpc/react";
import type { RouterOutputs } from "@/trpc/types";
import { usePermission } from "../auth/access";
import { FILTER_MAX } from "@/server/shared/limits";
import { SelectFilter, TextFilter } from "../text-filter";
import { Badge, buttonClass, Empty, ErrorNotice, JsonValue, linkClass, Loading, Pager, RelativeTime, Section, shortId, statusTone, tableClass, TableHead, TableWrap, tdClass, type Tone } from "../ui";
import { INTENT_STATUSES, intentsSearchParams, toIntentListInput } from "./search-params";

type Intent = RouterOutputs["intents"]["list"]["items"][number];
type Sweep = RouterOutputs["sweeps"]["run"][number];

/** process_exit reasons in plain words (docs/rules.md §2.4). */
const REASONS: Record<Intent["creatorVerdict"]["reason"], string> = {
  self: "it is this dashboard process",
  same_process: "the recorded process is still running on this host",
  pid_gone: "no process with that pid exists on this host",
  pid_recycled: "that pid now belongs to a different process",
  foreign_pid_space: "recorded on another host or container, so it is not judged from here",
  unreadable: "this host's process table could not be read",
  unidentified: "no complete identity was recorded",
};

const VERDICT_TONE: Record<Intent["creatorVerdict"]["verdict"], Tone> = { alive: "info", exited: "good", unknown: "warn" };

function CreatorCell({ intent }: { intent: Intent }) {
  const c = intent.creator;
  return (
    <div className="text-xs">
      {c ? (
        <div className="font-mono" title={`boot ${c.bootId ?? "?"} · pid ${c.pid ?? "?"} · started ${c.startedAt ?? "?"} · pid space ${c.pidSpace ?? "?"}`}>
          {c.bootId ? shortId(c.bootId) : "?"} · pid {c.pid ?? "?"}
        </div>
      ) : (
        <div>not recorded</div>
      )}
      <div className="mt-1 flex flex-wrap items-center gap-1">
        <Badge tone={VERDICT_TONE[intent.creatorVerdict.verdict]}>{intent.creatorVerdict.verdict}</Badge>
        <span className="text-zinc-700 dark:text-zinc-300">{REASONS[intent.creatorVerdict.reason]}</span>
      </div>
    </div>
  );
}

export function IntentsView() {
  const trpc = useTRPC();
  const [values, setValues] = useQueryStates(intentsSearchParams, { history: "push" });
  const list = useQuery({ ...trpc.intents.list.queryOptions(toIntentListInput(values)), ...LIVE, placeholderData: keepPreviousData });
  // Each intent shows its run's status. A creator that died moves no token: the safety interval catches it.
  useLiveRefetch(["intents", "runs"], [trpc.intents.list.pathFilter()]);

  return (
    <>
      <form aria-label="Filters" className="flex flex-wrap items-end gap-3" onSubmit={(e) => e.preventDefault()}>
        <SelectFilter
          id="f-intent-status"
          label="Status"
          value={values.status === "all" ? null : values.status}
          allLabel="All statuses"
          options={INTENT_STATUSES.filter((s) => s !== "all").map((s) => ({ value: s, label: `${s.replace("_", " ")}${list.data ? ` (${list.data.byStatus[s]}${list.data.byStatusCapped.includes(s) ? "+" : ""})` : ""}` }))}
          onChange={(status) => void setValues({ status: status ?? "all", cursor: null })}
        />
        <TextFilter id="f-intent-company" maxLength={FILTER_MAX.companyId} label="Company" value={values.company} onApply={(company) => void setValues({ company, cursor: null })} />
        <TextFilter id="f-intent-q" maxLength={FILTER_MAX.search} label="Search" value={values.q} onApply={(q) => void setValues({ q, cursor: null })} placeholder="operation, name or run id" />
      </form>

      <SweepNow />

      <Section
        title="Creation intents"
        id="intents-list"
        actions={list.data ? <p className="text-sm text-zinc-700 dark:text-zinc-300">{list.data.totalCapped ? `${list.data.total.toLocaleString("en")}+` : list.data.total} on instance <span className="font-mono">{list.data.instanceId}</span></p> : null}
      >
        {list.isPending ? (
          <Loading label="Loading intents…" />
        ) : list.isError ? (
          <ErrorNotice title="Could not load the intents." error={list.error} />
        ) : list.data.items.length === 0 ? (
          <Empty>{values.status === "pending" && !values.company && !values.q ? "No pending creation intents: every sandbox request was settled." : "No intents match these filters."}</Empty>
        ) : (
          <>
            <IntentsTable items={list.data.items} />
            <Pager cursor={values.cursor} nextCursor={list.data.nextCursor} onPage={(cursor) => void setValues({ cursor })} />
          </>
        )}
      </Section>
    </>
  );
}

function IntentsTable({ items }: { items: Intent[] }) {
  const heads = ["Operation", "Status", "Company", "Run", "Age", "Creator and live verdict", "Sweep would", "Next attempt", "Settle deadline", "Attempts", "Last inspection"];
  return (
    <TableWrap label="Creation intents">
      <table className={tableClass} data-testid="intents-table">
        <TableHead columns={heads} />
        <tbody className="divide-y divide-zinc-100 dark:divide-zinc-800">
          {items.map((i) => (
            <tr key={i.id} data-intent-id={i.id}>
              <td className={`${tdClass} font-mono text-xs`}>
                <div title={i.id}>{shortId(i.id)}</div>
                <div className="text-zinc-700 dark:text-zinc-300">{i.creationName}</div>
              </td>
              <td className={tdClass}>
                <Badge tone={i.status === "pending" ? "warn" : i.status === "manual_reconciliation" ? "bad" : "neutral"}>{i.status}</Badge>
              </td>
              <td className={`${tdClass} font-mono text-xs`}>{i.companyId}</td>
              <td className={tdClass}>
                {i.run ? (
                  <span className="flex flex-wrap items-center gap-1">
                    <Link href={`/runs/${i.run.id}`} className={`${linkClass} font-mono text-xs`} title={i.run.id}>
                      {shortId(i.run.id)}
                    </Link>
                    <Badge tone={statusTone(i.run.status)}>{i.run.status}</Badge>
                  </span>
                ) : (
                  <span className="text-xs whitespace-nowrap" title={`run id ${i.runId} names no run (a probe or qualification acquire)`}>
                    no run
                  </span>
                )}
              </td>
              <td className={tdClass}>
                <RelativeTime date={i.createdAt} />
              </td>
              <td className={tdClass}>
                <CreatorCell intent={i} />
              </td>
              <td className={`${tdClass} text-xs`}>{i.sweepWould ? <span className="font-mono">{i.sweepWould.verdict}</span> : "—"}</td>
              <td className={tdClass}>
                <RelativeTime date={i.nextAttemptAt} />
              </td>
              <td className={tdClass}>
                <RelativeTime date={i.settleDeadline} />
              </td>
              <td className={`${tdClass} tabular-nums`}>{i.attempts}</td>
              <td className={`${tdClass} max-w-xs text-xs`} data-testid="last-inspection">
                {i.lastInspectionText == null ? (
                  "—"
                ) : (
                  <>
                    <p>{i.lastInspectionText}</p>
                    {i.lastInspectedAt ? (
                      <p className="text-zinc-700 dark:text-zinc-300">
                        <RelativeTime date={i.lastInspectedAt} />
                      </p>
                    ) : null}
                    <details className="mt-1">
                      <summary className="cursor-pointer text-zinc-700 dark:text-zinc-300">as recorded</summary>
                      <JsonValue value={i.lastInspection} />
                    </details>
                  </>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableWrap>
  );
}

/** Runs the sweeps now, in the dashboard's process, and shows what they decided. */
function SweepNow() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const inFlight = useRef(false);
  const can = usePermission("sweeps.run", "run the sweeps");
  const sweep = useMutation(
    trpc.sweeps.run.mutationOptions({
      onSuccess: (summaries) => {
        const judged = summaries.reduce((n, s) => n + s.judged, 0);
        const destroyed = summaries.reduce((n, s) => n + s.destroyed, 0);
        toast.success(`Sweep done: ${judged} judged, ${destroyed} sandbox${destroyed === 1 ? "" : "es"} destroyed.`);
      },
      onError: (err) => toast.error(`The sweep failed: ${err.message}`),
      onSettled: () => Promise.all([queryClient.invalidateQueries(trpc.intents.pathFilter()), queryClient.invalidateQueries(trpc.orphans.pathFilter())]),
    }),
  );
  return (
    <section aria-label="Run the sweeps now" className="mt-6 flex flex-col gap-3 rounded border border-zinc-200 p-4 dark:border-zinc-800">
      <div className="flex flex-wrap items-center gap-3">
        <button
          type="button"
          className={buttonClass.primary}
          disabled={sweep.isPending || !can.allowed}
          aria-describedby={can.reason ? "sweep-refusal" : undefined}
          onClick={() => {
            if (inFlight.current) return;
            inFlight.current = true;
            sweep.mutate({ kind: "all" }, { onSettled: () => (inFlight.current = false) });
          }}
        >
          {sweep.isPending ? "Sweeping…" : "Run sweep now"}
        </button>
        <p className="text-sm text-zinc-700 dark:text-zinc-300">Runs the creation-intent and teardown sweeps in this dashboard&apos;s process, as a controller would, and shows what they decided.</p>
      </div>
      {can.reason ? (
        <p id="sweep-refusal" className="text-sm text-zinc-700 dark:text-zinc-300" data-testid="sweep-refusal">
          {can.reason}
        </p>
      ) : null}
      {sweep.isError ? <ErrorNotice title="The sweep failed." error={sweep.error} /> : null}
      {sweep.data ? <SweepResult summaries={sweep.data} /> : null}
    </section>
  );
}

function SweepResult({ summaries }: { summaries: Sweep[] }) {
  return (
    <section aria-label="What the sweep decided" className="grid gap-3 text-sm md:grid-cols-2" data-testid="sweep-result">
      {summaries.map((s) => (
        <div key={s.passId} className="rounded bg-zinc-50 p-3 dark:bg-zinc-900">
          <p className="font-medium">
            {s.kind === "creation_intents" ? "Creation intents" : "Teardown"}: {s.judged} judged over {s.pages} page{s.pages === 1 ? "" : "s"}, {s.reclaimed} reclaimed, {s.destroyed} destroyed
          </p>
          {Object.keys(s.verdicts).length ? (
            <p className="mt-1 flex flex-wrap gap-1">
              {Object.entries(s.verdicts).map(([v, n]) => (
                <Badge key={v}>
                  {v}: {n}
                </Badge>
              ))}
            </p>
          ) : (
            <p className="mt-1 text-zinc-700 dark:text-zinc-300">Nothing to decide.</p>
          )}
          {s.decisions.length ? (
            <details className="mt-1">
              <summary className="cursor-pointer text-xs">Each decision ({s.decisions.length})</summary>
              <ul className="mt-1 max-h-48 overflow-auto font-mono text-xs">
                {s.decisions.map((d) => (
                  <li key={`${d.id}-${d.verdict}`}>
                    {shortId(d.id)} → {d.verdict}
                    {d.reason ? ` (${d.reason})` : ""}
                  </li>
                ))}
              </ul>
            </details>
          ) : null}
        </div>
      ))}
    </section>
  );
}
