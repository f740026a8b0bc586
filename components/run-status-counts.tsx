"use client";

import { useQuery } from "@tanstack/react-query";
import { useTRPC } from "@/trpc/react";

const ORDER = ["queued", "starting", "running", "suspended", "succeeded", "failed", "cancelled"] as const;

export function RunStatusCounts() {
  const trpc = useTRPC();
  const counts = useQuery({ ...trpc.runs.countByStatus.queryOptions(), refetchInterval: 5_000 });

  if (counts.isPending) {
    return <p className="mt-6 text-sm text-zinc-600 dark:text-zinc-400" role="status">Loading run counts…</p>;
  }
  if (counts.isError) {
    return (
      <p className="mt-6 rounded border border-red-300 bg-red-50 p-3 text-sm text-red-800 dark:border-red-800 dark:bg-red-950 dark:text-red-200" role="alert">
        Could not load run counts: {counts.error.message}
      </p>
    );
  }
  const { total, byStatus } = counts.data;
  return (
    <section aria-label="Runs by status" className="mt-6">
      <p className="text-sm" data-testid="runs-total">
        {total === 0 ? "No runs yet." : `${total} run${total === 1 ? "" : "s"} in all.`}
      </p>
      <dl className="mt-3 grid grid-cols-2 gap-3 sm:grid-cols-4 lg:grid-cols-7">
        {ORDER.map((status) => (
          <div key={status} className="rounded border border-zinc-200 p-3 dark:border-zinc-800" data-testid={`count-${status}`}>
            <dt className="text-xs uppercase tracking-wide text-zinc-600 dark:text-zinc-400">{status}</dt>
            <dd className="mt-1 text-2xl font-semibold tabular-nums">{byStatus[status]}</dd>
          </div>
        ))}
      </dl>
    </section>
  );
}
