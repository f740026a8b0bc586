"use client";

import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import type { ReactNode } from "react";
import { liveEvery, useLiveRefetch } from "@/trpc/live";
import { useTRPC } from "@/trpc/react";
import type { RouterOutputs } from "@/trpc/types";
import { STUCK_REASONS } from "@/server/shared/engine";
import { serializeRunsSearch } from "../runs/search-params";
import { STUCK_LABELS } from "../runs/stuck-runs";
import { Badge, ErrorNotice, formatUsd, linkClass, Loading, RelativeTime, statusTone } from "../ui";

const ORDER = ["queued", "starting", "running", "suspended", "succeeded", "failed", "cancelled"] as const;

type RunsSearch = Parameters<typeof serializeRunsSearch>[1];
const runsHref = (patch: NonNullable<RunsSearch>) => `/runs${serializeRunsSearch(patch)}`;

function Card({ title, testId, tone, children }: { title: string; testId: string; tone: "calm" | "attention"; children: ReactNode }) {
  return (
    <li
      data-testid={testId}
      data-attention={tone === "attention" ? "yes" : "no"}
      className={`rounded-lg border p-4 ${tone === "attention" ? "border-amber-400 bg-amber-50 dark:border-amber-700 dark:bg-amber-950" : "border-zinc-200 dark:border-zinc-800"}`}
    >
      <h3 className="text-sm font-semibold">{title}</h3>
      <div className="mt-2 text-sm">{children}</div>
    </li>
  );
}

/** What needs someone now, each with a link to the list that shows it; then runs by status. */
export function Overview() {
  const trpc = useTRPC();
  // Its orphans come from the provider, which moves no token: a shorter safety interval for them.
  const overview = useQuery({ ...trpc.overview.get.queryOptions({}), ...liveEvery(20_000) });
  useLiveRefetch(["runs", "intents", "waves"], [trpc.overview.get.pathFilter()]);

  if (overview.isPending) return <Loading label="Loading the overview…" />;
  if (overview.isError) return <ErrorNotice title="Could not load the overview." error={overview.error} />;
  const o = overview.data;
  const waiting = o.awaitingRetry.reduce((n, g) => n + g.count, 0);

  return (
    <>
      <section aria-labelledby="attention-heading" className="mt-6">
        <h2 id="attention-heading" className="text-lg font-semibold">
          Needs attention
        </h2>
        <ul className="mt-3 grid gap-3 md:grid-cols-2">
          <Card title="Controllers and provider" testId="attention-health" tone={o.health.controllers.live === 0 || o.health.providerOutage ? "attention" : "calm"}>
            <Health health={o.health} />
          </Card>

          <Card title="Stuck runs" testId="attention-stuck" tone={o.stuck.any ? "attention" : "calm"}>
            <StuckCard counts={o.stuck} />
          </Card>

          <Card title="Failed runs waiting for Retry" testId="attention-retry" tone={waiting ? "attention" : "calm"}>
            {waiting === 0 ? (
              <p>No failed run waits for Retry.</p>
            ) : (
              <ul className="flex flex-col gap-2">
                {o.awaitingRetry.map((g) => (
                  <li key={g.code}>
                    <Link href={runsHref({ status: "failed", code: g.code })} className={`${linkClass} font-medium`} data-testid="retry-group">
                      {g.count} × <span className="font-mono text-xs">{g.code}</span>
                    </Link>
                    <p className="text-xs text-zinc-700 dark:text-zinc-300">{g.message}</p>
                  </li>
                ))}
              </ul>
            )}
          </Card>

          <Card title="Creation intents past their wait" testId="attention-intents" tone={o.overdueIntents.count ? "attention" : "calm"}>
            {o.overdueIntents.count === 0 ? (
              <p>No pending intent is past its wait.</p>
            ) : (
              <p>
                <Link href="/intents?status=pending" className={`${linkClass} font-medium`}>
                  {o.overdueIntents.count} pending intent{o.overdueIntents.count === 1 ? "" : "s"}
                </Link>{" "}
                waited longer than they should; the oldest was due <RelativeTime date={o.overdueIntents.oldestDueAt} />.
              </p>
            )}
          </Card>

          <Card title="Orphaned sandboxes" testId="attention-orphans" tone={o.orphans?.count ? "attention" : "calm"}>
            {o.orphans === null ? (
              <p role="alert">Could not list the provider&apos;s sandboxes: {o.orphansError}</p>
            ) : o.orphans.count === 0 ? (
              <p>No orphaned sandbox is costing money.</p>
            ) : (
              <>
                <p>
                  <Link href="/orphans" className={`${linkClass} font-medium`}>
                    {o.orphans.count} orphan{o.orphans.count === 1 ? "" : "s"}
                  </Link>{" "}
                  at risk: <span className="font-semibold tabular-nums" data-testid="orphans-hourly">{formatUsd(o.orphans.hourlyCost)} an hour</span>.
                </p>
                <p className="mt-1 text-xs text-zinc-600 dark:text-zinc-400">
                  As of <RelativeTime date={o.orphans.listedAt} />.
                </p>
                {o.orphansError ? (
                  <p role="alert" className="mt-1 text-xs">
                    The last listing of the provider failed: {o.orphansError}
                  </p>
                ) : null}
                {o.orphans.byVerdict.reclaimable ? (
                  <p className="mt-1 text-xs">
                    <Link href="/orphans?verdict=reclaimable" className={linkClass}>
                      {o.orphans.byVerdict.reclaimable} reclaimable
                    </Link>
                  </p>
                ) : null}
              </>
            )}
          </Card>

          <Card title="Last restart-chaos wave" testId="attention-wave" tone={o.lastWave && o.lastWave.passed === false ? "attention" : "calm"}>
            {o.lastWave === null ? (
              <p>No wave yet.</p>
            ) : (
              <p className="flex flex-wrap items-center gap-2">
                <Link href={`/waves/${encodeURIComponent(o.lastWave.id)}`} className={`${linkClass} font-mono text-xs`}>
                  {o.lastWave.id}
                </Link>
                <Badge tone={o.lastWave.passed === true ? "good" : o.lastWave.passed === false ? "bad" : "info"}>{o.lastWave.passed === null ? o.lastWave.status : o.lastWave.passed ? "passed" : "failed"}</Badge>
                <span>
                  {o.lastWave.tasksPassed} of {o.lastWave.tasks} tasks passed · <RelativeTime date={o.lastWave.startedAt} />
                </span>
              </p>
            )}
          </Card>
        </ul>
      </section>

      <section aria-labelledby="status-heading" className="mt-8">
        <h2 id="status-heading" className="text-lg font-semibold">
          Runs by status
        </h2>
        <p className="mt-1 text-sm" data-testid="runs-total">
          {o.runs.total === 0 ? (
            "No runs yet."
          ) : (
            <Link href="/runs" className={linkClass}>{`${o.runs.total} run${o.runs.total === 1 ? "" : "s"} in all.`}</Link>
          )}
        </p>
        <ul className="mt-3 grid grid-cols-2 gap-3 sm:grid-cols-4 lg:grid-cols-7">
          {ORDER.map((status) => (
            <li key={status}>
              <Link
                href={runsHref({ status })}
                data-testid={`count-${status}`}
                className="block rounded border border-zinc-200 p-3 hover:border-blue-400 focus-visible:outline-2 dark:border-zinc-800"
              >
                <span className="flex items-center justify-between">
                  <Badge tone={statusTone(status)}>{status}</Badge>
                </span>
                <span className="mt-1 block text-2xl font-semibold tabular-nums">{o.runs.byStatus[status]}</span>
              </Link>
            </li>
          ))}
        </ul>
      </section>
    </>
  );
}

type HealthData = RouterOutputs["overview"]["get"]["health"];

/** A build as people read it: its version, and the runner program it ships. */
function versionText(v: HealthData["controllers"]["versions"][number]): string {
  return `${v.version}${v.runnerDigest ? `, runner ${v.runnerDigest.slice(0, 8)} (protocol ${v.runnerProtocol ?? "?"})` : ""}`;
}

/** Whether controllers run, and whether they reach the provider (docs/rules.md §2.8). */
function Health({ health }: { health: HealthData }) {
  const { controllers, providerOutage, runsWaiting } = health;
  return (
    <>
      {controllers.live === 0 ? (
        <p role="alert" data-testid="no-controller">
          No controller running{controllers.noneSince ? (
            <>
              {" "}since <RelativeTime date={controllers.noneSince} />
            </>
          ) : null}
          : queued runs wait and interrupted runs are not recovered until one starts.
        </p>
      ) : (
        <>
          <p data-testid="controllers-live">
            {controllers.live} controller{controllers.live === 1 ? "" : "s"} running
            {controllers.versions.length === 1 ? <> ({versionText(controllers.versions[0]!)})</> : null}.
          </p>
          {controllers.versions.length > 1 ? (
            // Two builds side by side is a rolling deploy; more is one gone wrong (docs/operations.md).
            <ul className="mt-1 text-sm" data-testid="controller-versions" {...(controllers.versions.length > 2 ? { role: "alert" } : {})}>
              {controllers.versions.length > 2 ? <li className="font-semibold">{controllers.versions.length} builds run side by side: a deploy supports two.</li> : null}
              {controllers.versions.map((v) => (
                <li key={`${v.version} ${v.runnerDigest ?? ""}`}>
                  {v.controllers} on {versionText(v)}
                </li>
              ))}
            </ul>
          ) : null}
        </>
      )}
      {providerOutage ? (
        <p role="alert" className="mt-1" data-testid="provider-outage">
          Provider unreachable since <RelativeTime date={providerOutage.since} />
          {providerOutage.lastError ? <> (last error: <span className="font-mono text-xs">{providerOutage.lastError}</span>)</> : null}:{" "}
          <span className="font-semibold tabular-nums">{runsWaiting}</span> run{runsWaiting === 1 ? "" : "s"} waiting. No run fails for it; they go on when it is back.
        </p>
      ) : controllers.live > 0 ? (
        <p className="mt-1">The provider answers.</p>
      ) : null}
    </>
  );
}

/** Live runs that are not moving, by reason, each linking to the runs list under that filter (docs/rules.md "Stuck runs"). */
function StuckCard({ counts }: { counts: RouterOutputs["overview"]["get"]["stuck"] }) {
  if (counts.any === 0) return <p>No run is stuck.</p>;
  return (
    <>
      <p>
        <Link href={runsHref({ stuck: "any" })} className={`${linkClass} font-medium`} data-testid="stuck-any">
          {counts.any} stuck run{counts.any === 1 ? "" : "s"}
        </Link>{" "}
        (a run may be stuck for several reasons):
      </p>
      <ul className="mt-1 flex flex-col gap-1">
        {STUCK_REASONS.filter((r) => counts[r] > 0).map((r) => (
          <li key={r}>
            <Link href={runsHref({ stuck: r })} className={linkClass} data-testid="stuck-group" data-reason={r}>
              <span className="tabular-nums">{counts[r]}</span> · {STUCK_LABELS[r].toLowerCase()}
            </Link>
          </li>
        ))}
      </ul>
    </>
  );
}
