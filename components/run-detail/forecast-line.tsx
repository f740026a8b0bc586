"use client";

import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { liveEvery } from "@/trpc/live";
import { useTRPC } from "@/trpc/react";
import { ForecastCheckText, PREDICTION_TONE, predictionDetail } from "../forecast/forecast-check";
import { Badge, linkClass, RelativeTime } from "../ui";

/** "Restart forecast": the latest stored prediction for this run and whether the restart since did what it said (§2.12). */
export function ForecastLine({ runId }: { runId: string }) {
  const trpc = useTRPC();
  const latest = useQuery({ ...trpc.forecasts.forRun.queryOptions({ runId }), ...liveEvery(10_000) });
  const f = latest.data;
  return (
    <p className="my-3 flex flex-wrap items-center gap-2 text-sm" data-testid="run-forecast">
      <span className="font-medium">Restart forecast:</span>
      {latest.isPending ? (
        <span>loading…</span>
      ) : latest.isError ? (
        <span>could not be read ({latest.error.message})</span>
      ) : !f ? (
        <span className="text-zinc-700 dark:text-zinc-300">
          none taken for this run (
          <Link className={`${linkClass} underline`} href="/forecast">
            take one
          </Link>
          )
        </span>
      ) : (
        <>
          <Badge tone={PREDICTION_TONE[f.prediction]}>{f.prediction}</Badge>
          <span className="font-mono text-xs">{predictionDetail(f)}</span>
          <span>— {f.reason}</span>
          <span className="text-xs text-zinc-700 dark:text-zinc-300">
            (
            <Link className={`${linkClass} underline`} href={`/forecast?forecast=${f.forecastId}`}>
              taken <RelativeTime date={new Date(f.takenAt)} />
            </Link>{" "}
            by {f.takenBy})
          </span>
          <ForecastCheckText outcome={f.outcome} check={f.check} />
        </>
      )}
    </p>
  );
}
