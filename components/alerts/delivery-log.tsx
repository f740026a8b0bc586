"use client";

import { useQuery } from "@tanstack/react-query";
import { useTRPC } from "@/trpc/react";
import { Badge, Empty, ErrorNotice, Loading, RelativeTime, tableClass, TableHead, TableWrap, tdClass, type Tone } from "../ui";

const COLUMNS = ["Event", "Status", "Attempts", "Last answer", "Next attempt", "Delivered", "Created"] as const;

const TONE: Record<string, Tone> = { delivered: "good", pending: "warn", failed: "bad" };

/** One endpoint's deliveries, newest first; polled quickly while any is pending (a test shows its result in seconds). */
export function DeliveryLog({ endpointId }: { endpointId: string }) {
  const trpc = useTRPC();
  const log = useQuery(
    trpc.alerts.deliveries.queryOptions(
      { endpointId, limit: 50 },
      { refetchInterval: (q) => (q.state.data?.some((d) => d.status === "pending") ? 1_500 : 15_000) },
    ),
  );
  if (log.isPending) return <Loading label="Loading deliveries…" />;
  if (log.isError) return <ErrorNotice title="Could not read the delivery log." error={log.error} />;
  if (log.data.length === 0) return <Empty>Nothing sent to this endpoint yet. Press Test to send a test alert.</Empty>;
  return (
    <TableWrap label="Deliveries to this endpoint">
      <table className={tableClass} data-testid="delivery-log">
        <TableHead columns={COLUMNS} />
        <tbody className="divide-y divide-zinc-100 dark:divide-zinc-800">
          {log.data.map((d) => (
            <tr key={d.id} data-testid="delivery-row" data-status={d.status}>
              <td className={tdClass}>
                <div className="font-mono text-xs">{d.type}</div>
                <div className="max-w-md text-xs text-zinc-700 dark:text-zinc-300">{d.text}</div>
              </td>
              <td className={tdClass}>
                <Badge tone={TONE[d.status] ?? "neutral"}>{d.status}</Badge>
              </td>
              <td className={tdClass}>{d.attempts}</td>
              <td className={`${tdClass} text-xs`}>{d.lastStatus !== null ? `HTTP ${d.lastStatus}` : null}{d.lastError ? <div className="text-red-700 dark:text-red-300">{d.lastError}</div> : null}</td>
              <td className={`${tdClass} text-xs`}>{d.status === "pending" ? <RelativeTime date={d.nextAttemptAt} /> : "—"}</td>
              <td className={`${tdClass} text-xs`}>{d.deliveredAt ? <RelativeTime date={d.deliveredAt} /> : "—"}</td>
              <td className={`${tdClass} text-xs`}>
                <RelativeTime date={d.createdAt} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableWrap>
  );
}
