"use client";

import { Bar, BarChart, CartesianGrid, Cell, ReferenceLine, ResponsiveContainer, Tooltip, XAxis, YAxis } from "recharts";
import type { WaveReport } from "@/server/shared/wave-report";

const COLORS: Record<string, string> = { succeeded: "#15803d", failed: "#b91c1c" };

/** Each run's span on the wave's clock, with the kills marked where they happened. */
export function WaveTimeline({ report }: { report: WaveReport }) {
  const t0 = Date.parse(report.startedAt);
  const end = (Date.parse(report.finishedAt) - t0) / 1000;
  const faults = new Map(report.plan.tasks.map((t) => [t.key, t.faults]));
  const rows = report.tasks.flatMap((task) =>
    task.runs.map((run, i) => {
      const from = Math.max(0, (Date.parse(run.createdAt) - t0) / 1000);
      const to = run.finishedAt ? (Date.parse(run.finishedAt) - t0) / 1000 : end;
      const f = faults.get(task.id) ?? [];
      return {
        label: `${task.id}${task.runs.length > 1 ? ` #${i + 1}` : ""}${i === 0 && f.length ? ` · ${f.join(",")}` : ""}`,
        offset: from,
        duration: Math.max(0.05, to - from),
        status: run.status,
        code: run.failureCode,
        restarts: run.restarts,
      };
    }),
  );
  const kills = report.events.filter((e) => e.kind === "kill" && !e.detail.includes("skipped"));
  return (
    <figure aria-label="Wave timeline" className="rounded border border-zinc-200 p-3 dark:border-zinc-800">
      <div style={{ width: "100%", height: Math.max(160, rows.length * 28 + 60) }}>
        <ResponsiveContainer>
          <BarChart data={rows} layout="vertical" margin={{ top: 16, right: 24, bottom: 8, left: 8 }}>
            <CartesianGrid strokeDasharray="3 3" horizontal={false} />
            <XAxis type="number" domain={[0, Math.ceil(end)]} unit=" s" tick={{ fontSize: 11 }} />
            <YAxis type="category" dataKey="label" width={120} tick={{ fontSize: 11 }} />
            <Tooltip
              formatter={(value, name, item) => {
                if (name === "offset") return [null, null];
                const p = item.payload as (typeof rows)[number];
                return [`${Number(value).toFixed(1)} s · ${p.status}${p.code ? ` · ${p.code}` : ""}${p.restarts ? ` · ${p.restarts} restart(s)` : ""}`, "run"];
              }}
            />
            <Bar dataKey="offset" stackId="span" fill="transparent" isAnimationActive={false} />
            <Bar dataKey="duration" stackId="span" isAnimationActive={false}>
              {rows.map((r, i) => (
                <Cell key={i} fill={COLORS[r.status] ?? "#2563eb"} />
              ))}
            </Bar>
            {kills.map((k, i) => (
              <ReferenceLine key={i} x={k.atMs / 1000} stroke="#d97706" strokeDasharray="4 2" label={{ value: k.detail.split(":")[0] ?? "kill", position: "top", fontSize: 11, fill: "#b45309" }} />
            ))}
          </BarChart>
        </ResponsiveContainer>
      </div>
      <figcaption className="mt-2 text-xs text-zinc-600 dark:text-zinc-400">
        Bars: each run from creation to its end (green succeeded, red failed, blue unfinished). Dashed lines: controller kills ({kills.map((k) => k.detail.split(":")[0]).join(", ") || "none"}). Faults are named beside the task.
      </figcaption>
    </figure>
  );
}
