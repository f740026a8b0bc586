import Link from "next/link";
import type { ReactNode } from "react";

/** Small presentational pieces shared by the pages: one look for states, badges and values. */

export function cx(...parts: Array<string | false | null | undefined>): string {
  return parts.filter(Boolean).join(" ");
}

export function PageHeader({ title, children }: { title: string; children?: ReactNode }) {
  return (
    <div className="mb-6">
      <h1 className="text-2xl font-semibold tracking-tight">{title}</h1>
      {children ? <div className="mt-1 text-sm text-zinc-600 dark:text-zinc-400">{children}</div> : null}
    </div>
  );
}

export function Section({ title, id, actions, children }: { title: string; id?: string; actions?: ReactNode; children: ReactNode }) {
  const headingId = id ? `${id}-heading` : undefined;
  return (
    <section aria-labelledby={headingId} className="mt-8">
      <div className="mb-3 flex flex-wrap items-center justify-between gap-3">
        <h2 id={headingId} className="text-lg font-semibold">
          {title}
        </h2>
        {actions}
      </div>
      {children}
    </section>
  );
}

/** A failed request, with the server's message (which names the field for a bad input). */
export function ErrorNotice({ title, error }: { title: string; error: { message: string } | null | undefined }) {
  return (
    <div role="alert" className="rounded border border-red-300 bg-red-50 p-3 text-sm text-red-900 dark:border-red-800 dark:bg-red-950 dark:text-red-100">
      <p className="font-medium">{title}</p>
      {error?.message ? <p className="mt-1 font-mono text-xs break-words">{error.message}</p> : null}
    </div>
  );
}

export function Loading({ label }: { label: string }) {
  return (
    <p role="status" className="py-6 text-sm text-zinc-600 dark:text-zinc-400">
      {label}
    </p>
  );
}

export function Empty({ children }: { children: ReactNode }) {
  return <div className="rounded border border-dashed border-zinc-300 p-6 text-center text-sm text-zinc-600 dark:border-zinc-700 dark:text-zinc-400">{children}</div>;
}

export type Tone = "neutral" | "good" | "bad" | "warn" | "info";

const TONES: Record<Tone, string> = {
  neutral: "bg-zinc-100 text-zinc-800 ring-zinc-300 dark:bg-zinc-800 dark:text-zinc-100 dark:ring-zinc-600",
  good: "bg-green-50 text-green-800 ring-green-300 dark:bg-green-950 dark:text-green-200 dark:ring-green-800",
  bad: "bg-red-50 text-red-800 ring-red-300 dark:bg-red-950 dark:text-red-200 dark:ring-red-800",
  warn: "bg-amber-50 text-amber-900 ring-amber-300 dark:bg-amber-950 dark:text-amber-100 dark:ring-amber-800",
  info: "bg-blue-50 text-blue-800 ring-blue-300 dark:bg-blue-950 dark:text-blue-100 dark:ring-blue-800",
};

export function Badge({ tone = "neutral", children, title }: { tone?: Tone; children: ReactNode; title?: string }) {
  return (
    <span title={title} className={cx("inline-flex items-center rounded px-1.5 py-0.5 text-xs font-medium whitespace-nowrap ring-1 ring-inset", TONES[tone])}>
      {children}
    </span>
  );
}

export function statusTone(status: string): Tone {
  switch (status) {
    case "succeeded":
      return "good";
    case "failed":
      return "bad";
    case "queued":
    case "starting":
    case "running":
      return "info";
    case "suspended":
      return "warn";
    default:
      return "neutral";
  }
}

export const buttonClass = {
  primary:
    "inline-flex items-center gap-1.5 rounded bg-blue-700 px-3 py-1.5 text-sm font-medium text-white hover:bg-blue-800 disabled:cursor-not-allowed disabled:bg-zinc-300 disabled:text-zinc-700 dark:bg-blue-700 dark:hover:bg-blue-800 dark:disabled:bg-zinc-700 dark:disabled:text-zinc-300",
  danger:
    "inline-flex items-center gap-1.5 rounded bg-red-700 px-3 py-1.5 text-sm font-medium text-white hover:bg-red-800 disabled:cursor-not-allowed disabled:bg-zinc-300 disabled:text-zinc-700 dark:bg-red-700 dark:hover:bg-red-800 dark:disabled:bg-zinc-700 dark:disabled:text-zinc-300",
  secondary:
    "inline-flex items-center gap-1.5 rounded border border-zinc-300 bg-white px-3 py-1.5 text-sm font-medium text-zinc-900 hover:bg-zinc-50 disabled:cursor-not-allowed disabled:text-zinc-500 dark:border-zinc-600 dark:bg-zinc-900 dark:text-zinc-100 dark:hover:bg-zinc-800 dark:disabled:text-zinc-400",
} as const;

export const inputClass =
  "rounded border border-zinc-300 bg-white px-2 py-1.5 text-sm text-zinc-900 dark:border-zinc-600 dark:bg-zinc-900 dark:text-zinc-100";

export const linkClass = "text-blue-700 underline-offset-2 hover:underline dark:text-blue-300";

export function TextLink({ href, children, title }: { href: string; children: ReactNode; title?: string }) {
  return (
    <Link href={href} title={title} className={linkClass}>
      {children}
    </Link>
  );
}

/** The first block of an id: enough to recognise, the whole id on hover and in the link. */
export function shortId(id: string): string {
  return id.length > 12 ? id.slice(0, 8) : id;
}

export { formatDuration, RelativeTime } from "./relative-time";

export function formatUsd(n: number): string {
  return n >= 1 ? `$${n.toFixed(2)}` : `$${n.toFixed(4)}`;
}

/** A recorded JSON value, shown as it was stored. */
export function JsonValue({ value }: { value: unknown }) {
  if (value === undefined) return <span className="text-zinc-600 dark:text-zinc-400">—</span>;
  return <span className="font-mono break-all">{JSON.stringify(value)}</span>;
}

export function JsonBlock({ value, label }: { value: unknown; label: string }) {
  return (
    <pre aria-label={label} tabIndex={0} className="max-h-80 overflow-auto rounded bg-zinc-100 p-3 font-mono text-xs dark:bg-zinc-900">
      {JSON.stringify(value, null, 2)}
    </pre>
  );
}

export function Field({ label, children }: { label: string; children: ReactNode }) {
  return (
    <div className="min-w-0">
      <dt className="text-xs font-medium tracking-wide text-zinc-600 uppercase dark:text-zinc-400">{label}</dt>
      <dd className="mt-0.5 text-sm break-words">{children}</dd>
    </div>
  );
}

export const tableClass = "min-w-full divide-y divide-zinc-200 text-sm dark:divide-zinc-800";
export const thClass = "px-2 py-2 text-left text-xs font-semibold tracking-wide text-zinc-700 uppercase dark:text-zinc-300";
export const tdClass = "px-2 py-2 align-top";

/** A table's header row of plain column names. */
export function TableHead({ columns }: { columns: readonly string[] }) {
  return (
    <thead className="bg-zinc-50 dark:bg-zinc-900">
      <tr>
        {columns.map((h) => (
          <th key={h} scope="col" className={thClass}>
            {h}
          </th>
        ))}
      </tr>
    </thead>
  );
}

export function TableWrap({ label, children }: { label: string; children: ReactNode }) {
  return (
    <div role="region" aria-label={label} tabIndex={0} className="overflow-x-auto rounded border border-zinc-200 dark:border-zinc-800">
      {children}
    </div>
  );
}

/** First / Next page of a cursor-paged list; `children` go after the buttons (a page-size picker). */
export function Pager({ cursor, nextCursor, onPage, children }: { cursor: string | null; nextCursor: string | null; onPage: (cursor: string | null) => void; children?: ReactNode }) {
  return (
    <nav aria-label="Pages" className="mt-3 flex flex-wrap items-center gap-3">
      <button type="button" className={buttonClass.secondary} disabled={!cursor} onClick={() => onPage(null)}>
        First page
      </button>
      <button type="button" className={buttonClass.secondary} disabled={!nextCursor} onClick={() => onPage(nextCursor)}>
        Next page
      </button>
      {children}
    </nav>
  );
}

/**
 * A whole list read by one query: loading, its error, empty, or the table of its rows (the
 * People and API tokens pages). `row` renders one row; `columns` heads the table.
 */
export function ListTable<T>({
  query,
  loading,
  errorTitle,
  empty,
  label,
  testId,
  columns,
  row,
}: {
  query: { isPending: boolean; isError: boolean; error: { message: string } | null; data: readonly T[] | undefined };
  loading: string;
  errorTitle: string;
  empty: ReactNode;
  label: string;
  testId: string;
  columns: readonly string[];
  row: (item: T) => ReactNode;
}) {
  if (query.isPending) return <Loading label={loading} />;
  if (query.isError || !query.data) return <ErrorNotice title={errorTitle} error={query.error} />;
  if (query.data.length === 0) return <Empty>{empty}</Empty>;
  return (
    <TableWrap label={label}>
      <table className={tableClass} data-testid={testId}>
        <TableHead columns={columns} />
        <tbody className="divide-y divide-zinc-100 dark:divide-zinc-800">{query.data.map(row)}</tbody>
      </table>
    </TableWrap>
  );
}
