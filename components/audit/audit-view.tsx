"use client";

import { keepPreviousData, useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useQueryStates } from "nuqs";
import { LIVE, useLiveRefetch } from "@/trpc/live";
import { useTRPC } from "@/trpc/react";
import type { RouterOutputs } from "@/trpc/types";
import { DateTimeFilter } from "../datetime-filter";
import { FILTER_MAX } from "@/server/shared/limits";
import { SelectFilter, TextFilter } from "../text-filter";
import { Badge, buttonClass, Empty, ErrorNotice, JsonBlock, linkClass, Loading, RelativeTime, Section, TableWrap, tableClass, tdClass, type Tone, TableHead } from "../ui";
import { AUDIT_FILTERS, AUDIT_OUTCOMES, auditExportHref, auditSearchParams, toAuditListInput, type AuditValues } from "./search-params";

type Entry = RouterOutputs["audit"]["list"]["items"][number];

const OUTCOME_TONE: Record<string, Tone> = { ok: "good", refused: "warn", error: "bad" };

/** Actions worth suggesting before any is on screen. */
const KNOWN_ACTIONS = ["run.retry", "runs.retry", "run.submit", "orphans.reclaim", "orphans.reclaim_preview", "orphans.destroy_unrecorded", "sweep.run", "wave.import", "user.add", "users.add", "user.update", "user.disable", "user.enable", "user.reset_password", "csrf.refused", "audit.export"];

export function AuditView() {
  const trpc = useTRPC();
  const [values, setValues] = useQueryStates(auditSearchParams, { history: "push" });
  // A filter change starts again at the newest entries (the cursor belongs to one filter set).
  const setFilter = (patch: Partial<Omit<AuditValues, "before">>) => void setValues({ ...patch, before: null });
  const list = useQuery({ ...trpc.audit.list.queryOptions(toAuditListInput(values)), ...LIVE, placeholderData: keepPreviousData });
  useLiveRefetch(["audit"], [trpc.audit.list.pathFilter()]);

  const filtered = AUDIT_FILTERS.some((k) => values[k] !== null);
  const actions = [...new Set([...(list.data?.items.map((e) => e.action) ?? []), ...KNOWN_ACTIONS])].sort();

  return (
    <>
      <form aria-label="Filters" className="flex flex-wrap items-end gap-3" onSubmit={(e) => e.preventDefault()}>
        <TextFilter id="f-audit-actor" maxLength={FILTER_MAX.actor} label="Actor" value={values.actor} onApply={(actor) => setFilter({ actor })} placeholder="part of an email" />
        <TextFilter id="f-audit-action" maxLength={FILTER_MAX.action} label="Action" value={values.action} onApply={(action) => setFilter({ action })} list="audit-actions" options={actions} />
        <SelectFilter id="f-audit-outcome" label="Outcome" value={values.outcome} options={AUDIT_OUTCOMES.map((o) => ({ value: o, label: o }))} onChange={(outcome) => setFilter({ outcome })} />
        <TextFilter id="f-audit-target-type" maxLength={FILTER_MAX.targetType} label="Target type" value={values.targetType} onApply={(targetType) => setFilter({ targetType })} placeholder="run, procedure, user…" />
        <TextFilter id="f-audit-target-id" maxLength={FILTER_MAX.targetId} label="Target id" value={values.targetId} onApply={(targetId) => setFilter({ targetId })} />
        <DateTimeFilter id="f-audit-from" label="From" value={values.from} onChange={(from) => setFilter({ from })} />
        <DateTimeFilter id="f-audit-to" label="To" value={values.to} onChange={(to) => setFilter({ to })} />
        <button
          type="button"
          className={buttonClass.secondary}
          disabled={!filtered && !values.before}
          onClick={() => void setValues({ actor: null, action: null, outcome: null, targetType: null, targetId: null, from: null, to: null, before: null })}
        >
          Clear filters
        </button>
      </form>

      <Section
        title="Entries"
        id="audit-list"
        actions={
          <div className="flex flex-wrap items-center gap-2">
            <span className="text-sm text-zinc-700 dark:text-zinc-300">Export everything these filters match (up to 10,000 entries):</span>
            <a className={buttonClass.secondary} href={auditExportHref("csv", values)} download data-testid="export-csv">
              Export CSV
            </a>
            <a className={buttonClass.secondary} href={auditExportHref("json", values)} download data-testid="export-json">
              Export JSON
            </a>
          </div>
        }
      >
        {list.isPending ? (
          <Loading label="Loading the audit log…" />
        ) : list.isError ? (
          <ErrorNotice title="Could not load the audit log." error={list.error} />
        ) : list.data.items.length === 0 ? (
          <Empty>{filtered ? "No entries match these filters." : values.before ? "No older entries." : "Nothing has been done through Runwarden yet."}</Empty>
        ) : (
          <AuditTable items={list.data.items} />
        )}
        {list.data ? (
          <nav aria-label="Pages" className="mt-3 flex flex-wrap items-center gap-3">
            <button type="button" className={buttonClass.secondary} disabled={!values.before} onClick={() => void setValues({ before: null })}>
              Newest entries
            </button>
            <button type="button" className={buttonClass.secondary} disabled={!list.data.nextCursor} onClick={() => void setValues({ before: list.data.nextCursor })}>
              Older entries
            </button>
            <span className="text-sm text-zinc-700 dark:text-zinc-300" aria-live="polite" data-testid="audit-page">
              {list.data.items.length} entr{list.data.items.length === 1 ? "y" : "ies"}
              {values.before ? ` older than #${values.before}` : ", newest first"}
            </span>
          </nav>
        ) : null}
      </Section>
    </>
  );
}

function utc(date: Date): string {
  return `${date.toISOString().slice(0, 19).replace("T", " ")} UTC`;
}

function Target({ e }: { e: Entry }) {
  if (!e.targetId) return <span>{e.targetType}</span>;
  const id =
    e.targetType === "run" ? (
      <Link href={`/runs/${e.targetId}`} className={`${linkClass} font-mono`}>
        {e.targetId}
      </Link>
    ) : e.targetType === "wave" ? (
      <Link href={`/waves/${encodeURIComponent(e.targetId)}`} className={`${linkClass} font-mono`}>
        {e.targetId}
      </Link>
    ) : e.targetLabel ? (
      <span title={e.targetId} data-testid="target-label">
        {e.targetLabel}
      </span>
    ) : (
      <span className="font-mono">{e.targetId}</span>
    );
  return (
    <>
      <div>{e.targetType}</div>
      <div className="text-xs break-all">{id}</div>
    </>
  );
}

function AuditTable({ items }: { items: Entry[] }) {
  const heads = ["Time", "Actor", "Role", "Action", "Target", "Company", "Outcome", "Input and detail"];
  return (
    <TableWrap label="Audit entries">
      <table className={tableClass} data-testid="audit-table">
        <TableHead columns={heads} />
        <tbody className="divide-y divide-zinc-100 dark:divide-zinc-800">
          {items.map((e) => (
            <tr key={e.id} data-audit-id={e.id} data-action={e.action} data-outcome={e.outcome}>
              <td className={`${tdClass} text-xs whitespace-nowrap`}>
                <div className="tabular-nums">{utc(e.at)}</div>
                <div className="text-zinc-700 dark:text-zinc-300">
                  <RelativeTime date={e.at} /> · #{e.id}
                </div>
              </td>
              <td className={`${tdClass} text-xs break-all`}>{e.actor}</td>
              <td className={tdClass}>
                <Badge>{e.role}</Badge>
              </td>
              <td className={`${tdClass} font-mono text-xs`}>{e.action}</td>
              <td className={`${tdClass} max-w-xs text-xs`}>
                <Target e={e} />
              </td>
              <td className={`${tdClass} font-mono text-xs`}>{e.companyId ?? "—"}</td>
              <td className={tdClass}>
                <Badge tone={OUTCOME_TONE[e.outcome] ?? "neutral"}>{e.outcome}</Badge>
              </td>
              <td className={`${tdClass} max-w-md text-xs`}>
                {e.input == null && e.detail == null ? (
                  "—"
                ) : (
                  <details>
                    <summary className="cursor-pointer">{summary(e)}</summary>
                    {e.input != null ? (
                      <div className="mt-2">
                        <p className="font-medium">Input</p>
                        <JsonBlock value={e.input} label={`Input of entry ${e.id}`} />
                      </div>
                    ) : null}
                    {e.detail != null ? (
                      <div className="mt-2">
                        <p className="font-medium">Detail</p>
                        <JsonBlock value={e.detail} label={`Detail of entry ${e.id}`} />
                      </div>
                    ) : null}
                  </details>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableWrap>
  );
}

/** One line before the details open: the reason of a refusal, or which parts there are. */
function summary(e: Entry): string {
  const reason = (e.detail as { reason?: unknown } | null)?.reason;
  if (typeof reason === "string") return reason.length > 80 ? `${reason.slice(0, 79)}…` : reason;
  return [e.input != null ? "input" : null, e.detail != null ? "detail" : null].filter(Boolean).join(" and ");
}
