"use client";

import dynamic from "next/dynamic";
import { useQuery } from "@tanstack/react-query";
import { Dialog } from "radix-ui";
import { useState } from "react";
import { CHECK_IDS, CHECK_TITLES, summarise, type CheckId } from "@/server/shared/wave-checks";
import type { WaveReport } from "@/server/shared/wave-report";
import { useTRPC } from "@/trpc/react";
import { Badge, buttonClass, Empty, ErrorNotice, JsonBlock, Loading, PageHeader, RelativeTime, Section, statusTone, TableWrap, tableClass, tdClass, thClass } from "../ui";
import { waveTone } from "./tones";

// The chart library is most of this page's JS: it loads after the report itself (docs/decisions/0003-cost-at-scale.md).
const WaveTimeline = dynamic(() => import("./wave-timeline").then((m) => m.WaveTimeline), {
  ssr: false,
  loading: () => <Loading label="Loading the timeline…" />,
});

export function WaveDetail({ id }: { id: string }) {
  const trpc = useTRPC();
  const wave = useQuery({
    ...trpc.waves.get.queryOptions({ id }),
    // A running wave is watched closely; a finished one never changes.
    refetchInterval: (q) => (q.state.data?.status === "running" ? 2_000 : false),
    refetchIntervalInBackground: false,
  });
  if (wave.isPending) return <Loading label="Loading the wave…" />;
  if (wave.isError) return <ErrorNotice title={`Could not load wave ${id}`} error={wave.error} />;
  const w = wave.data;
  return (
    <>
      <PageHeader title={`Wave ${w.id}`}>
        <span className="mr-2">
          <Badge tone={waveTone(w.status)}>{w.status}</Badge>
        </span>
        started <RelativeTime date={w.startedAt} />
        {w.imported ? " · imported" : ""}
      </PageHeader>
      {w.report ? <Finished report={w.report} /> : <Running live={w.live} status={w.status} />}
    </>
  );
}

function Running({ live, status }: { live: Array<{ key: string; runId: string; status: string; turns: string; failureCode: string | null; restarts: number }>; status: string }) {
  if (status !== "running") return <Empty>This wave stopped before it finished ({status}); it has no report.</Empty>;
  return (
    <Section title="In progress" id="progress">
      <p className="mb-2 text-sm" role="status">
        The wave is running; this view refreshes every two seconds.
      </p>
      {live.length === 0 ? (
        <Loading label="Submitting the tasks…" />
      ) : (
        <TableWrap label="Tasks in progress">
          <table className={tableClass}>
            <thead className="bg-zinc-50 dark:bg-zinc-900">
              <tr>
                <th scope="col" className={thClass}>Task</th>
                <th scope="col" className={thClass}>Status</th>
                <th scope="col" className={thClass}>Turns</th>
                <th scope="col" className={thClass}>Restarts</th>
                <th scope="col" className={thClass}>Code</th>
              </tr>
            </thead>
            <tbody className="divide-y divide-zinc-100 dark:divide-zinc-800">
              {live.map((t) => (
                <tr key={t.key}>
                  <td className={`${tdClass} font-mono text-xs`}>
                    <a className="text-blue-700 underline-offset-2 hover:underline dark:text-blue-300" href={`/runs/${t.runId}`}>
                      {t.key}
                    </a>
                  </td>
                  <td className={tdClass}>
                    <Badge tone={statusTone(t.status)}>{t.status}</Badge>
                  </td>
                  <td className={`${tdClass} tabular-nums`}>{t.turns}</td>
                  <td className={`${tdClass} tabular-nums`}>{t.restarts}</td>
                  <td className={`${tdClass} font-mono text-xs`}>{t.failureCode ?? "—"}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      )}
    </Section>
  );
}

function Finished({ report }: { report: WaveReport }) {
  const summary = summarise(report);
  const [open, setOpen] = useState<{ task: string; check: CheckId } | null>(null);
  const selected = open ? report.tasks.find((t) => t.id === open.task) : null;
  const download = () => {
    const blob = new Blob([JSON.stringify(report, null, 2)], { type: "application/json" });
    const a = document.createElement("a");
    a.href = URL.createObjectURL(blob);
    a.download = `${report.id}.json`;
    a.click();
    URL.revokeObjectURL(a.href);
  };
  const secs = report.reclaims.map((r) => r.seconds).sort((x, y) => x - y);
  return (
    <>
      <dl className="grid grid-cols-2 gap-3 sm:grid-cols-6" data-testid="wave-summary">
        <Stat label="Tasks passed" value={`${summary.tasksPassed}/${summary.tasks}`} />
        <Stat label="Kills landed" value={`${report.kills.filter((k) => k.landed).length}/${report.kills.length}`} />
        <Stat label="Retries needed" value={String(summary.retries)} />
        <Stat label="Orphan sandboxes" value={String(summary.orphans)} />
        <Stat label="Decoys intact" value={`${report.decoys.filter((d) => d.intact).length}/${report.decoys.length}`} />
        <Stat label="Reclaim time (median / worst)" value={secs.length ? `${secs[Math.floor(secs.length / 2)]!.toFixed(1)} s / ${secs.at(-1)!.toFixed(1)} s` : "none reclaimed"} />
      </dl>
      <div className="mt-3">
        <button type="button" className={buttonClass.secondary} onClick={download}>
          Download report (JSON)
        </button>
      </div>

      <Section title="Tasks × checks" id="grid">
        <TableWrap label="Tasks by check">
          <table className={tableClass} data-testid="wave-grid">
            <thead className="bg-zinc-50 dark:bg-zinc-900">
              <tr>
                <th scope="col" className={thClass}>Task</th>
                {CHECK_IDS.map((c) => (
                  <th key={c} scope="col" className={thClass} title={CHECK_TITLES[c]}>
                    {c} <span className="font-normal normal-case">{CHECK_TITLES[c]}</span>
                  </th>
                ))}
                <th scope="col" className={thClass}>Restart</th>
                <th scope="col" className={thClass}>Retries</th>
                <th scope="col" className={thClass}>Failure codes</th>
              </tr>
            </thead>
            <tbody className="divide-y divide-zinc-100 dark:divide-zinc-800">
              {report.tasks.map((t) => (
                <tr key={t.id} data-task={t.id}>
                  <th scope="row" className={`${tdClass} font-mono text-xs`}>
                    {t.id} {t.passed ? <Badge tone="good">pass</Badge> : <Badge tone="bad">fail</Badge>}
                  </th>
                  {CHECK_IDS.map((c) => {
                    const result = t.checks[c];
                    // Absent: a report made before the check existed (R7) — not run, not a failure.
                    if (!result) {
                      return (
                        <td key={c} className={`${tdClass} text-xs text-zinc-700 dark:text-zinc-300`} data-cell={`${t.id}-${c}`}>
                          not run
                        </td>
                      );
                    }
                    return (
                      <td key={c} className={tdClass}>
                        <button
                          type="button"
                          data-cell={`${t.id}-${c}`}
                          onClick={() => setOpen({ task: t.id, check: c })}
                          className={`rounded px-2 py-0.5 text-xs font-semibold ring-1 ring-inset ${result.ok ? "bg-green-50 text-green-800 ring-green-300 dark:bg-green-950 dark:text-green-200" : "bg-red-50 text-red-800 ring-red-300 dark:bg-red-950 dark:text-red-200"}`}
                          aria-label={`${t.id} ${c} ${CHECK_TITLES[c]}: ${result.ok ? "pass" : "fail"}; show evidence`}
                        >
                          {result.ok ? "pass" : "FAIL"}
                        </button>
                      </td>
                    );
                  })}
                  <td className={tdClass}>{t.restartCrossing ? "yes" : "no"}</td>
                  <td className={`${tdClass} tabular-nums`}>{t.retriesNeeded}</td>
                  <td className={`${tdClass} font-mono text-xs`}>{t.failureCodes.join(", ") || "—"}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      </Section>

      <Dialog.Root open={open !== null} onOpenChange={(o) => !o && setOpen(null)}>
        <Dialog.Portal>
          <Dialog.Overlay className="fixed inset-0 z-40 bg-black/40" />
          <Dialog.Content className="fixed top-1/2 left-1/2 z-50 max-h-[85vh] w-[min(90vw,48rem)] -translate-x-1/2 -translate-y-1/2 overflow-auto rounded bg-white p-5 shadow-lg dark:bg-zinc-900">
            {open && selected ? (
              <>
                <Dialog.Title className="text-lg font-semibold">
                  {selected.id} · {open.check} {CHECK_TITLES[open.check]}: {selected.checks[open.check]?.ok === false ? "fail" : selected.checks[open.check] ? "pass" : "not run"}
                </Dialog.Title>
                <Dialog.Description className="mt-1 text-sm">{selected.checks[open.check]?.detail ?? ""}</Dialog.Description>
                <div className="mt-3">
                  <JsonBlock value={selected.checks[open.check] ?? null} label="Evidence" />
                </div>
                <p className="mt-3 text-sm">
                  Runs:{" "}
                  {selected.runs.map((r, i) => (
                    <a key={r.id} className="mr-2 font-mono text-xs text-blue-700 underline dark:text-blue-300" href={`/runs/${r.id}`}>
                      #{i + 1} {r.status}
                    </a>
                  ))}
                </p>
              </>
            ) : null}
            <Dialog.Close className={`${buttonClass.secondary} mt-4`}>Close</Dialog.Close>
          </Dialog.Content>
        </Dialog.Portal>
      </Dialog.Root>

      <Section title="Timeline" id="timeline">
        <WaveTimeline report={report} />
      </Section>

      <Section title="Failure codes" id="codes">
        {Object.keys(summary.failureCodes).length === 0 ? (
          <Empty>No failure code appeared.</Empty>
        ) : (
          <ul className="space-y-1 text-sm" data-testid="wave-codes">
            {Object.entries(summary.failureCodes)
              .sort((a, b) => b[1] - a[1])
              .map(([code, n]) => (
                <li key={code}>
                  <span className="font-mono text-xs">{code}</span> — {n} task{n === 1 ? "" : "s"}
                </li>
              ))}
          </ul>
        )}
      </Section>

      <Section title="Kills and faults" id="kills">
        <p className="text-sm">
          A kill counts only where it landed as planned: on a controller with a run in flight, or for K4 where the armed controller reached its
          crash point. A wave with a kill or fault that did not happen does not pass.
        </p>
        {report.kills.length === 0 && report.faults.length === 0 ? (
          <p className="mt-2 text-sm">No kills or faults were recorded for this wave.</p>
        ) : (
          <ul className="mt-2 space-y-1 text-sm" data-testid="wave-kills">
            {report.kills.map((k, i) => (
              <li key={`k${i}`}>
                {k.landed ? <Badge tone="good">landed</Badge> : <Badge tone="bad">did not land</Badge>}{" "}
                <span className="font-mono">{k.kind}</span>
                {k.crashAt ? ` (${k.crashAt})` : ""}
                {k.firedAtMs !== null ? ` at ${(k.firedAtMs / 1000).toFixed(1)} s` : ""}: {k.detail}
                {k.restartPid ? `; restarted as pid ${k.restartPid}` : ""}
              </li>
            ))}
            {report.faults.map((f, i) => (
              <li key={`f${i}`}>
                {f.fired ? <Badge tone="good">fired</Badge> : <Badge tone="bad">did not fire</Badge>} fault <span className="font-mono">{f.fault}</span> on {f.task}:{" "}
                {f.detail}
              </li>
            ))}
          </ul>
        )}
      </Section>

      <Section title="Orphans and decoys" id="orphans">
        <p className="text-sm">
          {report.orphanSandboxes.length === 0 ? "No sandbox of this wave was left without a live run's lease." : `${report.orphanSandboxes.length} sandbox(es) left behind:`}
        </p>
        {report.orphanSandboxes.length ? <JsonBlock value={report.orphanSandboxes} label="Orphan sandboxes" /> : null}
        <ul className="mt-2 space-y-1 text-sm">
          {report.decoys.map((d) => (
            <li key={d.id}>
              Decoy of {d.kind.replace("_", " ")}: {d.intact ? <Badge tone="good">untouched</Badge> : <Badge tone="bad">touched</Badge>}
            </li>
          ))}
        </ul>
      </Section>

      <Section title="What happened" id="events">
        <ol className="space-y-1 font-mono text-xs">
          {report.events.map((e, i) => (
            <li key={i}>
              <span className="tabular-nums">{(e.atMs / 1000).toFixed(1).padStart(5)} s</span> {e.kind}: {e.detail}
            </li>
          ))}
        </ol>
      </Section>
    </>
  );
}

function Stat({ label, value }: { label: string; value: string }) {
  return (
    <div className="rounded border border-zinc-200 p-3 dark:border-zinc-800">
      <dt className="text-xs tracking-wide text-zinc-600 uppercase dark:text-zinc-400">{label}</dt>
      <dd className="mt-1 text-xl font-semibold tabular-nums">{value}</dd>
    </div>
  );
}
