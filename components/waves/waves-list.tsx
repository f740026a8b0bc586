"use client";

import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useState } from "react";
import { LIVE, useLiveRefetch } from "@/trpc/live";
import { useTRPC } from "@/trpc/react";
import { Badge, buttonClass, Empty, ErrorNotice, Loading, RelativeTime, Section, TableWrap, tableClass, tdClass, thClass } from "../ui";
import { ImportWave } from "./import-wave";
import { waveTone } from "./tones";

export function WavesList() {
  const trpc = useTRPC();
  const waves = useQuery({ ...trpc.waves.list.queryOptions(), ...LIVE });
  useLiveRefetch(["waves", "runs"], [trpc.waves.list.pathFilter()]);
  const [picked, setPicked] = useState<string[]>([]);
  const toggle = (id: string) => setPicked((p) => (p.includes(id) ? p.filter((x) => x !== id) : [...p.slice(-1), id]));

  if (waves.isPending) return <Loading label="Loading waves…" />;
  if (waves.isError) return <ErrorNotice title="Could not load the waves" error={waves.error} />;
  const [a, b] = picked;
  return (
    <>
      <div className="mb-3 flex flex-wrap items-center gap-3">
        {a && b ? (
          <Link className={buttonClass.primary} href={`/waves/compare?a=${encodeURIComponent(a)}&b=${encodeURIComponent(b)}`}>
            Compare the two selected waves
          </Link>
        ) : (
          <span className="text-sm text-zinc-600 dark:text-zinc-400">Select two waves to compare them.</span>
        )}
      </div>
      {waves.data.length === 0 ? (
        <Empty>
          No waves yet. Run one with <code className="font-mono">npm run wave -- --seed 6402 --tasks 6</code>, or import a report below.
        </Empty>
      ) : (
        <TableWrap label="Waves">
          <table className={tableClass} data-testid="waves-table">
            <thead className="bg-zinc-50 dark:bg-zinc-900">
              <tr>
                <th scope="col" className={thClass}>
                  <span className="sr-only">Select</span>
                </th>
                <th scope="col" className={thClass}>Wave</th>
                <th scope="col" className={thClass}>Started</th>
                <th scope="col" className={thClass}>Result</th>
                <th scope="col" className={thClass}>Tasks passed</th>
                <th scope="col" className={thClass}>Kills</th>
                <th scope="col" className={thClass}>Faults</th>
                <th scope="col" className={thClass}>Orphans</th>
              </tr>
            </thead>
            <tbody className="divide-y divide-zinc-100 dark:divide-zinc-800">
              {waves.data.map((w) => {
                const rate = w.tasks ? w.tasksPassed / w.tasks : 0;
                return (
                  <tr key={w.id} data-wave={w.id}>
                    <td className={tdClass}>
                      <input type="checkbox" aria-label={`Select ${w.id} for comparison`} checked={picked.includes(w.id)} onChange={() => toggle(w.id)} disabled={w.status === "running"} />
                    </td>
                    <td className={`${tdClass} font-mono text-xs`}>
                      <Link className="text-blue-700 underline-offset-2 hover:underline dark:text-blue-300" href={`/waves/${encodeURIComponent(w.id)}`}>
                        {w.id}
                      </Link>
                      {w.imported ? <span className="ml-2"><Badge>imported</Badge></span> : null}
                    </td>
                    <td className={tdClass}>
                      <RelativeTime date={w.startedAt} />
                    </td>
                    <td className={tdClass}>
                      <Badge tone={waveTone(w.status)}>{w.status}</Badge>
                    </td>
                    <td className={tdClass}>
                      <div className="flex items-center gap-2">
                        <span className="tabular-nums">
                          {w.tasksPassed}/{w.tasks}
                        </span>
                        <span aria-hidden className="h-2 w-20 overflow-hidden rounded bg-zinc-200 dark:bg-zinc-800">
                          <span className="block h-2 bg-green-600" style={{ width: `${Math.round(rate * 100)}%` }} />
                        </span>
                      </div>
                    </td>
                    <td className={`${tdClass} text-xs`}>
                      {w.kills.join(", ") || "—"}
                      {w.killsLanded !== null && w.kills.length ? ` (${w.killsLanded}/${w.kills.length} landed)` : ""}
                    </td>
                    <td className={`${tdClass} text-xs`}>{w.faults.join(", ") || "—"}</td>
                    <td className={`${tdClass} tabular-nums`}>{w.orphans}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </TableWrap>
      )}
      <Section title="Import a report" id="import">
        <ImportWave />
      </Section>
    </>
  );
}
