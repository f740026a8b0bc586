"use client";

import { keepPreviousData, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { useQueryStates } from "nuqs";
import { usePermission } from "../auth/access";
import { ChecksTable } from "../checks-table";
import { SelectFilter } from "../text-filter";
import { toast } from "../toast";
import { Badge, buttonClass, cx, Empty, ErrorNotice, formatDuration, linkClass, Loading, RelativeTime, Section, shortId, TableHead, TableWrap, tableClass, tdClass } from "../ui";
import { liveEvery, useLiveRefetch } from "@/trpc/live";
import { useTRPC } from "@/trpc/react";
import type { RouterOutputs } from "@/trpc/types";
import { FORECAST_OUTCOME_FILTER, FORECAST_PREDICTION_FILTER, FORECAST_SOURCE_FILTER, forecastSearchParams, toForecastGetInput, toForecastListInput } from "./search-params";
import { ForecastCheckText, PREDICTION_TONE, predictionDetail } from "./forecast-check";

type Summary = RouterOutputs["forecasts"]["list"][number];
type ForecastRun = RouterOutputs["forecasts"]["get"]["runs"][number];

/** "850 ms", "2s", "3m": a forecast's own time. */
function ms(n: number): string {
  return n < 1000 ? `${n} ms` : formatDuration(n / 1000);
}

/** Checks land on the controller's tick after a restart; the runs topic moves with the restart itself. */
const REFRESH = liveEvery(10_000);

export function ForecastView() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [values, setValues] = useQueryStates(forecastSearchParams, { history: "push" });
  const list = useQuery({ ...trpc.forecasts.list.queryOptions(toForecastListInput(values)), ...REFRESH, placeholderData: keepPreviousData });
  useLiveRefetch(["runs"], [trpc.forecasts.pathFilter()]);
  const openId = values.forecast ?? list.data?.[0]?.id ?? null;
  const take = usePermission("forecasts.take", "take a forecast");
  const taking = useMutation(
    trpc.forecasts.take.mutationOptions({
      onSuccess: (r) => {
        toast.success(`Forecast taken in ${ms(r.durationMs)}: ${r.counts.continues} continue, ${r.counts.ends} end, ${r.counts.operator} for an operator.`);
        void setValues({ forecast: r.id, prediction: null, outcome: null });
      },
      onError: (err) => toast.error(`The forecast could not be taken: ${err.message}`),
      onSettled: () => queryClient.invalidateQueries(trpc.forecasts.pathFilter()),
    }),
  );

  return (
    <>
      <div className="flex flex-wrap items-end gap-3">
        <button type="button" className={buttonClass.primary} disabled={!take.allowed || taking.isPending} title={take.reason ?? undefined} onClick={() => taking.mutate({})} data-testid="take-forecast">
          {taking.isPending ? "Taking a forecast…" : "Take a forecast"}
        </button>
        {take.reason ? <span className="text-sm text-zinc-700 dark:text-zinc-300">{take.reason}.</span> : <span className="text-sm text-zinc-700 dark:text-zinc-300">Reads every live run of your companies; changes none.</span>}
        <SelectFilter id="f-forecast-source" label="Taken from" value={values.source} options={FORECAST_SOURCE_FILTER.map((s) => ({ value: s, label: s }))} onChange={(source) => void setValues({ source, forecast: null })} />
      </div>

      <Section title="Latest forecasts" id="forecast-list">
        {list.isPending ? (
          <Loading label="Loading the forecasts…" />
        ) : list.isError ? (
          <ErrorNotice title="Could not load the forecasts." error={list.error} />
        ) : list.data.length === 0 ? (
          <Empty>No forecast has been taken yet{values.source ? " from there" : ""}. Take one above, or run `runwarden forecast`.</Empty>
        ) : (
          <ForecastList items={list.data} openId={openId} onOpen={(forecast) => void setValues({ forecast })} />
        )}
      </Section>

      {openId ? <ForecastRuns id={openId} /> : null}
    </>
  );
}

function ForecastList({ items, openId, onOpen }: { items: Summary[]; openId: string | null; onOpen: (id: string) => void }) {
  return (
    <TableWrap label="Forecasts">
      <table className={tableClass} data-testid="forecasts">
        <TableHead columns={["Taken", "By", "From", "Runs", "Continue", "End", "Operator", "After a restart", "Took"]} />
        <tbody className="divide-y divide-zinc-100 dark:divide-zinc-800">
          {items.map((f) => (
            <tr key={f.id} data-forecast-id={f.id} className={cx(f.id === openId && "bg-zinc-50 dark:bg-zinc-900")}>
              <td className={`${tdClass} text-xs whitespace-nowrap`}>
                <button type="button" className={linkClass} onClick={() => onOpen(f.id)} aria-current={f.id === openId ? "true" : undefined}>
                  <RelativeTime date={new Date(f.createdAt)} />
                </button>
                <div className="font-mono text-zinc-700 dark:text-zinc-300">{shortId(f.id)}</div>
              </td>
              <td className={`${tdClass} text-xs break-all`}>
                {f.takenBy} <Badge>{f.takenRole}</Badge>
              </td>
              <td className={`${tdClass} text-xs`}>
                {f.source}
                {f.waveId ? (
                  <div>
                    <Link className={linkClass} href={`/waves/${encodeURIComponent(f.waveId)}`}>
                      {f.waveId}
                    </Link>
                  </div>
                ) : null}
              </td>
              <td className={`${tdClass} tabular-nums`}>{f.total}</td>
              <td className={tdClass}>
                <Badge tone="good">{f.continues}</Badge>
              </td>
              <td className={tdClass}>
                <Badge tone={f.ends ? "bad" : "neutral"}>{f.ends}</Badge>
              </td>
              <td className={tdClass}>
                <Badge tone={f.operator ? "warn" : "neutral"}>{f.operator}</Badge>
              </td>
              <td className={`${tdClass} text-xs`} data-testid="forecast-checked">
                {f.checked.held} held · <span className={f.checked.differed ? "font-semibold text-red-700 dark:text-red-300" : undefined}>{f.checked.differed} differed</span> · {f.checked.notRestarted} not restarted · {f.checked.pending} waiting
              </td>
              <td className={`${tdClass} text-xs tabular-nums`}>{ms(f.durationMs)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableWrap>
  );
}

function ForecastRuns({ id }: { id: string }) {
  const trpc = useTRPC();
  const [values, setValues] = useQueryStates(forecastSearchParams, { history: "push" });
  const detail = useQuery({ ...trpc.forecasts.get.queryOptions(toForecastGetInput(values, id)), ...REFRESH, placeholderData: keepPreviousData });
  return (
    <Section title={`Forecast ${shortId(id)}: its runs`} id="forecast-runs">
      <form aria-label="Filters" className="mb-3 flex flex-wrap items-end gap-3" onSubmit={(e) => e.preventDefault()}>
        <SelectFilter id="f-forecast-prediction" label="Prediction" value={values.prediction} options={FORECAST_PREDICTION_FILTER.map((p) => ({ value: p, label: p }))} onChange={(prediction) => void setValues({ prediction })} />
        <SelectFilter
          id="f-forecast-outcome"
          label="After a restart"
          value={values.outcome}
          options={FORECAST_OUTCOME_FILTER.map((o) => ({ value: o, label: o === "pending" ? "not checked yet" : o.replace("_", " ") }))}
          onChange={(outcome) => void setValues({ outcome })}
        />
      </form>
      {detail.isPending ? (
        <Loading label="Loading the forecast…" />
      ) : detail.isError ? (
        <ErrorNotice title="Could not load the forecast." error={detail.error} />
      ) : detail.data.runs.length === 0 ? (
        <Empty>{values.prediction || values.outcome ? "No run of this forecast matches these filters." : "This forecast found no live run."}</Empty>
      ) : (
        <RunsTable runs={detail.data.runs} />
      )}
    </Section>
  );
}

function RunsTable({ runs }: { runs: ForecastRun[] }) {
  return (
    <TableWrap label="Forecast runs">
      <table className={tableClass} data-testid="forecast-runs">
        <TableHead columns={["Run", "Status then", "Prediction", "Path or code", "Why", "After a restart"]} />
        <tbody className="divide-y divide-zinc-100 dark:divide-zinc-800">
          {runs.map((r) => (
            <tr key={r.runId} data-run-id={r.runId} data-prediction={r.prediction} data-outcome={r.outcome ?? "pending"}>
              <td className={`${tdClass} text-xs`}>
                <Link className={`${linkClass} font-mono`} href={`/runs/${r.runId}`}>
                  {shortId(r.runId)}
                </Link>
                <div className="text-zinc-700 dark:text-zinc-300">
                  {r.companyId} / {r.taskId}
                </div>
              </td>
              <td className={`${tdClass} text-xs`}>
                {r.status}
                {r.phase ? ` · ${r.phase}` : ""}
              </td>
              <td className={tdClass}>
                <Badge tone={PREDICTION_TONE[r.prediction]}>{r.prediction}</Badge>
              </td>
              <td className={`${tdClass} font-mono text-xs`}>{predictionDetail(r)}</td>
              <td className={`${tdClass} max-w-md text-xs`}>
                <details>
                  <summary className="cursor-pointer">{r.reason}</summary>
                  {r.proofs.map((p, i) => (
                    <div key={`${p.kind}-${i}`} className="mt-2">
                      <p className="font-medium">
                        {p.kind} → {p.verdict}
                        {p.code ? ` (${p.code})` : ""}
                      </p>
                      <ChecksTable checks={p.checks} label={`Checks of ${p.kind} for run ${r.runId}`} proof={{ kind: p.kind, verdict: p.verdict, reason: null }} />
                    </div>
                  ))}
                </details>
              </td>
              <td className={`${tdClass} text-xs`}>
                <ForecastCheckText outcome={r.outcome} check={r.check} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableWrap>
  );
}

