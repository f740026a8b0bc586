import Link from "next/link";
import { Badge, Empty, linkClass, RelativeTime, Section, shortId, statusTone } from "../ui";
import type { Detail } from "./detail";

/** The Retry chain this run belongs to. */
export function LineageSection({ detail: d }: { detail: Detail }) {
  return (
    <Section title="Lineage" id="lineage">
      {d.lineage.previous.length === 0 && d.lineage.next.length === 0 ? (
        <Empty>This run neither retries another run nor was retried.</Empty>
      ) : (
        <ol className="flex flex-col gap-1 text-sm" data-testid="lineage">
          {[...d.lineage.previous, { id: d.run.id, status: d.run.status, failureCode: d.run.failureCode, createdAt: d.run.createdAt }, ...d.lineage.next].map((r) => (
            <li key={r.id} className="flex flex-wrap items-center gap-2">
              {r.id === d.run.id ? (
                <span className="font-mono font-semibold">{shortId(r.id)} (this run)</span>
              ) : (
                <Link href={`/runs/${r.id}`} className={`${linkClass} font-mono`} title={r.id}>
                  {shortId(r.id)}
                </Link>
              )}
              <Badge tone={statusTone(r.status)}>{r.status}</Badge>
              {r.failureCode ? <span className="font-mono text-xs">{r.failureCode}</span> : null}
              <RelativeTime date={r.createdAt} />
            </li>
          ))}
        </ol>
      )}
    </Section>
  );
}
