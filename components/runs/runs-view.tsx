"use client";

import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useQueryStates } from "nuqs";
import { FAILURE_CODES } from "@/server/shared/engine";
import { LIVE, useLiveRefetch } from "@/trpc/live";
import { useTRPC } from "@/trpc/react";
import { DateTimeFilter } from "../datetime-filter";
import { FILTER_MAX } from "@/server/shared/limits";
import { SelectFilter, TextFilter } from "../text-filter";
import { buttonClass, ErrorNotice, inputClass, Loading, Pager, Section } from "../ui";
import { BulkAction } from "./bulk-action";
import { FailureGroups } from "./failure-groups";
import { RunsTable } from "./runs-table";
import { OUTCOMES, PAGE_SIZES, RUN_STATUSES, runsSearchParams, STUCK_FILTERS, TARGETS, TIME_RANGES, toRunFilter, toRunListInput } from "./search-params";
import { STUCK_LABELS, StuckRunsPanel } from "./stuck-runs";

const RANGE_LABELS: Record<(typeof TIME_RANGES)[number], string> = { "1h": "Last hour", "24h": "Last 24 hours", "7d": "Last 7 days", "30d": "Last 30 days" };

export function RunsView() {
  const trpc = useTRPC();
  // Every filter change starts again at the first page (the cursor belongs to one filter set).
  const [values, setValues] = useQueryStates(runsSearchParams, { history: "push" });
  const setFilter = (patch: Partial<Omit<typeof values, "cursor">>) => void setValues({ ...patch, cursor: null });

  // With the stuck filter the page lists stuck runs, with why, instead of every run (docs/rules.md "Stuck runs").
  const stuck = values.stuck !== null;
  const list = useQuery({ ...trpc.runs.list.queryOptions(toRunListInput(values)), ...LIVE, placeholderData: keepPreviousData, enabled: !stuck });
  // The total is its own request keyed by the filters alone: a page turn does not count again,
  // and the list never waits for it (docs/decisions/0003-cost-at-scale.md). No previous data: another filter's count would be wrong.
  const count = useQuery({ ...trpc.runs.count.queryOptions(toRunFilter(values)), ...LIVE, enabled: !stuck });
  const facets = useQuery(trpc.runs.facets.queryOptions());
  useLiveRefetch(["runs"], [trpc.runs.list.pathFilter(), trpc.runs.count.pathFilter(), trpc.runs.failureGroups.pathFilter(), trpc.runs.stuck.pathFilter()]);

  const codes = [...new Set([...FAILURE_CODES, ...(facets.data?.failureCodes ?? []), ...(values.code ? [values.code] : [])])];
  const filtered = Object.entries(values).some(([k, v]) => k !== "size" && k !== "cursor" && v !== null);

  return (
    <>
      <form aria-label="Filters" className="flex flex-wrap items-end gap-3" onSubmit={(e) => e.preventDefault()}>
        <SelectFilter id="f-status" label="Status" value={values.status} options={RUN_STATUSES.map((s) => ({ value: s, label: s }))} onChange={(status) => setFilter({ status })} />
        <SelectFilter id="f-outcome" label="Outcome" value={values.outcome} options={OUTCOMES.map((o) => ({ value: o, label: o.replace("_", " ") }))} onChange={(outcome) => setFilter({ outcome })} />
        <SelectFilter id="f-code" label="Failure code" value={values.code} options={codes.map((c) => ({ value: c, label: c }))} onChange={(code) => setFilter({ code })} />
        <TextFilter id="f-company" maxLength={FILTER_MAX.companyId} label="Company" value={values.company} onApply={(company) => setFilter({ company })} list="companies" options={facets.data?.companies} />
        <TextFilter id="f-provider" maxLength={FILTER_MAX.provider} label="Provider" value={values.provider} onApply={(provider) => setFilter({ provider })} list="providers" options={facets.data?.providers} />
        <SelectFilter id="f-target" label="Target" value={values.target} options={TARGETS.map((t) => ({ value: t, label: t }))} onChange={(target) => setFilter({ target })} />
        <SelectFilter id="f-range" label="Created" value={values.range} allLabel="Any time" options={TIME_RANGES.map((r) => ({ value: r, label: RANGE_LABELS[r] }))} onChange={(range) => setFilter({ range })} />
        <DateTimeFilter id="f-from" label="From" value={values.from} onChange={(from) => setFilter({ from })} />
        <DateTimeFilter id="f-to" label="To" value={values.to} onChange={(to) => setFilter({ to })} />
        <TextFilter id="f-search" maxLength={FILTER_MAX.search} label="Run or task id" value={values.q} onApply={(q) => setFilter({ q })} placeholder="run id or part of a task id" />
        <SelectFilter
          id="f-stuck"
          label="Stuck"
          value={values.stuck}
          allLabel="Every run"
          options={STUCK_FILTERS.map((r) => ({ value: r, label: r === "any" ? "Stuck, any reason" : STUCK_LABELS[r] }))}
          onChange={(stuck) => setFilter({ stuck })}
        />
        <button
          type="button"
          className={buttonClass.secondary}
          disabled={!filtered}
          onClick={() => void setValues({ status: null, outcome: null, code: null, company: null, provider: null, target: null, range: null, from: null, to: null, q: null, stuck: null, cursor: null })}
        >
          Clear filters
        </button>
      </form>

      {stuck ? (
        <StuckRunsPanel values={values} onPage={(cursor) => void setValues({ cursor })} />
      ) : (
        <>
      {/* Above the list: what went wrong, by code, is what a board user comes for. */}
      <Section title="Failures by code" id="failure-groups">
        <FailureGroupsPanel filter={toRunFilter(values)} values={values} />
      </Section>

      <Section
        title="Runs"
        id="runs-list"
        actions={
          list.data ? (
            <div className="flex flex-wrap items-center gap-3">
              <p className="text-sm text-zinc-700 dark:text-zinc-300" data-testid="runs-count" aria-live="polite" aria-busy={count.isPending}>
                {count.isError ? "Could not count the runs" : matchCount(count.data)}
                {values.cursor ? " (a later page)" : ""}
              </p>
              {/* A plan is named by a filter, never "every run". */}
              {filtered && list.data.items.length > 0 ? (
                <>
                  <BulkAction kind="retry" filter={toRunFilter(values)} label="Retry these…" title="Retry the runs this filter matches" />
                  <BulkAction kind="cancel" filter={toRunFilter(values)} label="Cancel these…" title="Cancel the runs this filter matches" />
                </>
              ) : null}
            </div>
          ) : null
        }
      >
        {list.isPending ? (
          <Loading label="Loading runs…" />
        ) : list.isError ? (
          <ErrorNotice title="Could not load the runs." error={list.error} />
        ) : (
          <>
            <RunsTable rows={list.data.items} values={values} filtered={filtered} />
            <Pager cursor={values.cursor} nextCursor={list.data.nextCursor} onPage={(cursor) => void setValues({ cursor })}>
              <label htmlFor="f-size" className="ml-auto text-sm text-zinc-700 dark:text-zinc-300">
                Per page
              </label>
              <select id="f-size" className={inputClass} value={values.size} onChange={(e) => void setValues({ size: Number(e.target.value), cursor: null })}>
                {PAGE_SIZES.map((n) => (
                  <option key={n} value={n}>
                    {n}
                  </option>
                ))}
              </select>
            </Pager>
          </>
        )}
      </Section>
        </>
      )}
    </>
  );
}

/** "1 run matches", "10,000+ runs match"; "… runs match" until the count answers. */
function matchCount(count: { total: number; totalCapped: boolean } | undefined): string {
  if (!count) return "… runs match";
  const one = count.total === 1 && !count.totalCapped;
  return `${count.total.toLocaleString("en")}${count.totalCapped ? "+" : ""} run${one ? "" : "s"} match${one ? "es" : ""}`;
}

type RunFilter = ReturnType<typeof toRunFilter>;

/**
 * The groups as the server prefetched them: when they answered with the list they are in the
 * first HTML, painted with it; otherwise "Loading…" until the browser's own request answers. Not a
 * Suspense boundary: React sends a boundary this size outlined and reveals it no sooner than
 * 300 ms after the first paint, and the groups are the page's largest element (its LCP). A
 * filter change keeps the last groups on screen until the new ones arrive.
 */
function FailureGroupsPanel({ filter, values }: { filter: RunFilter; values: Parameters<typeof FailureGroups>[0]["values"] }) {
  const trpc = useTRPC();
  const groups = useQuery({ ...trpc.runs.failureGroups.queryOptions(filter), ...LIVE, placeholderData: keepPreviousData });
  if (groups.isPending) return <Loading label="Loading failure groups…" />;
  if (groups.isError) return <ErrorNotice title="Could not load the failure groups." error={groups.error} />;
  return <FailureGroups groups={groups.data} values={values} />;
}
