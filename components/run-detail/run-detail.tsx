"use client";

import { useQuery } from "@tanstack/react-query";
import { LIVE, useLiveRefetch } from "@/trpc/live";
import { useTRPC } from "@/trpc/react";
import { ErrorNotice, Loading } from "../ui";
import { ClaimsSection } from "./claims-section";
import { ForecastLine } from "./forecast-line";
import { IntentsSection } from "./intents-section";
import { LeasesSection } from "./leases-section";
import { LineageSection } from "./lineage-section";
import { ProofsSection } from "./proofs-section";
import { RunFields } from "./run-fields";
import { RunSummary } from "./run-summary";
import { RunnerStateSection } from "./runner-state-section";
import { TimelineSection } from "./timeline-section";
import { TurnLogSection } from "./turn-log-section";

/** The run page (`/runs/[id]`): one live query (refetched when the runs or intents token moves), each section in its own file. */
export function RunDetail({ id }: { id: string }) {
  const trpc = useTRPC();
  const detail = useQuery({ ...trpc.runs.get.queryOptions({ id }), ...LIVE });
  // The page shows the run's leases and intents too.
  useLiveRefetch(["runs", "intents"], [trpc.runs.get.pathFilter()]);

  if (detail.isPending) return <Loading label="Loading the run…" />;
  if (detail.isError) return <ErrorNotice title="Could not load this run." error={detail.error} />;
  const d = detail.data;

  return (
    <>
      <RunSummary detail={d} />
      <RunFields detail={d} />
      <ForecastLine runId={id} />
      <ProofsSection id={id} detail={d} />
      <TurnLogSection detail={d} />
      <TimelineSection detail={d} />
      <ClaimsSection detail={d} />
      <LeasesSection detail={d} />
      <RunnerStateSection detail={d} />
      <LineageSection detail={d} />
      <IntentsSection detail={d} />
    </>
  );
}
