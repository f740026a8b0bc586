"use client";

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { useQueryStates } from "nuqs";
import { useRef, useState } from "react";
import { toast } from "../toast";
import { confirmWord, OWNERSHIP_VERDICTS } from "@/server/shared/confirm";
import { POLLED } from "@/trpc/live";
import { useTRPC } from "@/trpc/react";
import type { RouterOutputs } from "@/trpc/types";
import { useMe, usePermission } from "../auth/access";
import { FILTER_MAX } from "@/server/shared/limits";
import { SelectFilter, TextFilter } from "../text-filter";
import { orphansSearchParams, toOrphanListInput } from "./search-params";
import { Badge, buttonClass, Empty, ErrorNotice, formatDuration, formatUsd, inputClass, linkClass, Loading, Pager, RelativeTime, Section, shortId, tableClass, TableWrap, tdClass, thClass, type Tone } from "../ui";

type Orphan = RouterOutputs["orphans"]["list"]["items"][number];
type Reclaim = RouterOutputs["orphans"]["reclaim"];
type Verdict = Orphan["verdict"];

const VERDICT_TONE: Record<Verdict, Tone> = { reclaimable: "warn", unrecorded: "bad", live_creator: "info", foreign: "bad", unknown: "neutral" };
const VERDICT_LABEL: Record<Verdict, string> = { reclaimable: "reclaimable", unrecorded: "unrecorded", live_creator: "live creator", foreign: "foreign", unknown: "unknown" };
const OUTCOME_TONE: Record<Reclaim["results"][number]["outcome"], Tone> = { would_destroy: "warn", refused: "neutral", destroyed: "good", already_gone: "info", failed: "bad" };
const SINCE_LABEL: Record<Orphan["orphanSinceRule"], string> = { run_finished: "its run finished", lease_ended: "its last lease ended", intent_created: "its intent was made", created: "it was created" };

/** Selection, dry run and confirmation belong to one filter set: changing a filter drops them. */
interface Work {
  key: string;
  selected: ReadonlySet<string>;
  plan: Reclaim | null;
  typed: string;
}
const fresh = (key: string): Work => ({ key, selected: new Set(), plan: null, typed: "" });

/**
 * Says only what this person can know: someone who sees some companies sees only their
 * sandboxes, so "every sandbox is held" would be a claim about ones they are not shown.
 */
function emptyMessage(instanceId: string, held: number, companies: string[] | "all" | null): string {
  const heldText = held === 0 ? "none is held by a live run either" : `${held} ${held === 1 ? "is" : "are"} held by live runs`;
  if (companies === "all") {
    return held === 0 ? `No orphaned sandboxes: instance ${instanceId} has no sandboxes at the provider.` : `No orphaned sandboxes: every sandbox of instance ${instanceId} (${held}) is held by a live run.`;
  }
  const whose = companies && companies.length ? `of your compan${companies.length === 1 ? "y" : "ies"} (${companies.join(", ")})` : "of your companies";
  return `No orphaned sandboxes ${whose}: ${heldText}. Sandboxes of other companies are not shown to you.`;
}

export function OrphansView() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [values, setValues] = useQueryStates(orphansSearchParams, { history: "push" });
  const input = toOrphanListInput(values);
  const filterKey = JSON.stringify(input);
  const list = useQuery({ ...trpc.orphans.list.queryOptions(input), ...POLLED });

  const [stored, setWork] = useState<Work>(() => fresh(filterKey));
  const work = stored.key === filterKey ? stored : fresh(filterKey);
  const update = (patch: Partial<Work>) => setWork({ ...work, ...patch, key: filterKey });
  const [result, setResult] = useState<Reclaim | null>(null);
  const inFlight = useRef(false);
  const can = usePermission("orphans.reclaim", "reclaim sandboxes or run their dry run");
  const me = useMe();

  const shown = list.data?.items ?? [];
  const shownIds = new Set(shown.map((o) => o.id));
  // Only what is on screen can be selected: a sandbox that went away drops out.
  const selected = [...work.selected].filter((id) => shownIds.has(id));

  const preview = useMutation(
    trpc.orphans.reclaim.mutationOptions({
      onSuccess: (plan) => {
        update({ plan, typed: "" });
        setResult(null);
        toast.info(`Dry run: ${plan.counts.would_destroy} would be destroyed, ${plan.counts.refused} refused. Nothing was touched.`);
      },
      onError: (err) => toast.error(`Dry run failed: ${err.message}`),
    }),
  );
  const reclaim = useMutation(
    trpc.orphans.reclaim.mutationOptions({
      onSuccess: (done) => {
        setResult(done);
        setWork(fresh(filterKey));
        const c = done.counts;
        toast.success(`Reclaim done: ${c.destroyed} destroyed, ${c.already_gone} already gone, ${c.refused} refused${c.failed ? `, ${c.failed} failed` : ""}.`);
      },
      onError: (err) => toast.error(`Reclaim failed: ${err.message}`),
      onSettled: () => queryClient.invalidateQueries(trpc.orphans.pathFilter()),
    }),
  );

  const toDestroy = work.plan?.results.filter((r) => r.outcome === "would_destroy") ?? [];
  const word = toDestroy.length ? confirmWord(toDestroy.length) : null;

  const toggle = (id: string) => {
    const next = new Set(selected);
    if (next.has(id)) next.delete(id);
    else next.add(id);
    update({ selected: next, plan: null, typed: "" });
  };
  const allShown = shown.length > 0 && selected.length === shown.length;

  return (
    <>
      <form aria-label="Filters" className="flex flex-wrap items-end gap-3" onSubmit={(e) => e.preventDefault()}>
        <SelectFilter
          id="f-verdict"
          label="Ownership"
          value={values.verdict}
          options={OWNERSHIP_VERDICTS.map((v) => ({ value: v, label: `${VERDICT_LABEL[v]}${list.data ? ` (${list.data.byVerdict[v]})` : ""}` }))}
          onChange={(verdict) => void setValues({ verdict, cursor: null })}
        />
        <TextFilter id="f-orphan-company" maxLength={FILTER_MAX.companyId} label="Company" value={values.company} onApply={(company) => void setValues({ company, cursor: null })} />
        <TextFilter id="f-orphan-q" maxLength={FILTER_MAX.search} label="Search" value={values.q} onApply={(q) => void setValues({ q, cursor: null })} placeholder="sandbox name or id" />
      </form>

      <Section
        title="Orphaned sandboxes"
        id="orphans-list"
        actions={
          list.data ? (
            <p className="text-sm text-zinc-700 dark:text-zinc-300" data-testid="orphan-totals">
              {list.data.totals.count} match
              {list.data.totals.count > list.data.items.length ? ` (showing ${list.data.offset + 1}–${list.data.offset + list.data.items.length})` : ""} · {formatUsd(list.data.totals.hourlyCost)}/h ·{" "}
              {formatUsd(list.data.totals.accruedCost)} accrued · {list.data.held} held by live runs
              <br />
              <span className="text-xs text-zinc-600 dark:text-zinc-400" data-testid="orphan-inventory">
                Provider listed <RelativeTime date={list.data.listedAt} /> (in {(list.data.inventory.tookMs / 1000).toFixed(1)} s){list.data.inventory.refreshing ? "; listing it again…" : ""}; verdicts judged now.
              </span>
              {list.data.inventory.error ? (
                <span role="alert" className="block text-xs">
                  The last listing failed: {list.data.inventory.error}
                </span>
              ) : null}
            </p>
          ) : null
        }
      >
        {list.isPending ? (
          <Loading label="Asking the provider for this instance's sandboxes…" />
        ) : list.isError ? (
          <ErrorNotice title="Could not list the orphaned sandboxes." error={list.error} />
        ) : shown.length === 0 ? (
          <Empty>{values.verdict || values.company || values.q ? "No orphaned sandboxes match these filters." : emptyMessage(list.data.instanceId, list.data.held, me.data?.companies ?? null)}</Empty>
        ) : (
          <TableWrap label="Orphaned sandboxes">
            <table className={tableClass} data-testid="orphans-table">
              <thead className="bg-zinc-50 dark:bg-zinc-900">
                <tr>
                  <th scope="col" className={thClass}>
                    <input
                      type="checkbox"
                      aria-label="Select every sandbox shown"
                      checked={allShown}
                      onChange={() => update({ selected: allShown ? new Set() : new Set(shownIds), plan: null, typed: "" })}
                    />
                  </th>
                  {["Sandbox", "Ownership", "State", "Age", "Per hour", "Accrued as orphan", "Run / intent"].map((h) => (
                    <th key={h} scope="col" className={thClass}>
                      {h}
                    </th>
                  ))}
                </tr>
              </thead>
              <tbody className="divide-y divide-zinc-100 dark:divide-zinc-800">
                {shown.map((o) => (
                  <tr key={o.id} data-sandbox-id={o.id}>
                    <td className={tdClass}>
                      <input type="checkbox" aria-label={`Select ${o.name}`} checked={work.selected.has(o.id)} onChange={() => toggle(o.id)} />
                    </td>
                    <td className={`${tdClass} font-mono text-xs`}>
                      <div>{o.name}</div>
                      <div className="text-zinc-700 dark:text-zinc-300" title={o.id}>
                        {shortId(o.id)} · {o.companyId ?? "no company"}
                      </div>
                    </td>
                    <td className={`${tdClass} max-w-md`}>
                      <Badge tone={VERDICT_TONE[o.verdict]}>{VERDICT_LABEL[o.verdict]}</Badge>
                      <p className="mt-1 text-xs text-zinc-700 dark:text-zinc-300">{o.reason}</p>
                      {o.verdict === "unrecorded" && can.allowed ? <DestroyUnrecorded orphan={o} /> : null}
                    </td>
                    <td className={`${tdClass} text-xs`}>{o.state}</td>
                    <td className={`${tdClass} text-xs whitespace-nowrap`}>{formatDuration(o.ageSeconds)}</td>
                    <td className={`${tdClass} text-xs tabular-nums`}>{formatUsd(o.hourlyCost)}</td>
                    <td className={`${tdClass} text-xs`}>
                      <div className="font-semibold tabular-nums">{formatUsd(o.accruedCost)}</div>
                      <div className="text-zinc-700 dark:text-zinc-300">
                        since {SINCE_LABEL[o.orphanSinceRule]} (<RelativeTime date={o.orphanSince} />)
                      </div>
                    </td>
                    <td className={`${tdClass} text-xs`}>
                      {o.run ? (
                        <Link href={`/runs/${o.run.id}`} className={`${linkClass} font-mono`} title={o.run.id}>
                          {shortId(o.run.id)}
                        </Link>
                      ) : (
                        "no run"
                      )}
                      {o.run ? ` (${o.run.status})` : ""}
                      {o.intent ? (
                        <div className="font-mono" title={o.intent.id}>
                          intent {shortId(o.intent.id)} ({o.intent.status})
                        </div>
                      ) : null}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableWrap>
        )}
        {list.data && (values.cursor || list.data.nextCursor) ? (
          <Pager cursor={values.cursor} nextCursor={list.data.nextCursor} onPage={(cursor) => void setValues({ cursor })} />
        ) : null}
      </Section>

      <Section title="Reclaim" id="reclaim">
        <p className="mb-3 text-sm text-zinc-700 dark:text-zinc-300">
          A dry run comes first: it lists exactly what would be destroyed and what is refused, and touches nothing. Each sandbox is then checked again by its exact name and labels
          when you confirm.
        </p>
        <button
          type="button"
          className={buttonClass.secondary}
          disabled={selected.length === 0 || preview.isPending || !can.allowed}
          aria-describedby={can.reason ? "reclaim-refusal" : undefined}
          onClick={() => preview.mutate({ dryRun: true, sandboxIds: selected })}
        >
          {preview.isPending ? "Running the dry run…" : `Dry run (${selected.length} selected)`}
        </button>
        {can.reason ? (
          <p id="reclaim-refusal" className="mt-2 text-sm text-zinc-700 dark:text-zinc-300" data-testid="reclaim-refusal">
            {can.reason}
          </p>
        ) : null}
        {preview.isError ? (
          <div className="mt-3">
            <ErrorNotice title="The dry run failed." error={preview.error} />
          </div>
        ) : null}

        {work.plan ? (
          <div className="mt-4 rounded border border-amber-300 p-4 dark:border-amber-800" data-testid="dry-run">
            <h3 className="font-semibold">Dry run — nothing has been destroyed</h3>
            <ResultsTable results={work.plan.results} label="Dry run: what would happen to each sandbox" />
            {word ? (
              <form
                className="mt-4 flex flex-wrap items-end gap-3"
                onSubmit={(e) => {
                  e.preventDefault();
                  if (work.typed.trim() !== word || inFlight.current || !work.plan) return;
                  inFlight.current = true;
                  reclaim.mutate({ dryRun: false, planId: work.plan.planId, sandboxIds: toDestroy.map((r) => r.sandboxId), confirm: work.typed.trim() }, { onSettled: () => (inFlight.current = false) });
                }}
              >
                <div className="flex flex-col gap-1">
                  <label htmlFor="confirm-reclaim" className="text-sm">
                    Type <span className="font-mono font-semibold">{word}</span> to destroy {toDestroy.length} sandbox{toDestroy.length === 1 ? "" : "es"}
                  </label>
                  <input id="confirm-reclaim" className={`${inputClass} w-56 font-mono`} autoComplete="off" value={work.typed} onChange={(e) => update({ typed: e.target.value })} />
                </div>
                <button type="submit" className={buttonClass.danger} disabled={work.typed.trim() !== word || reclaim.isPending || !can.allowed}>
                  {reclaim.isPending ? "Destroying…" : `Destroy ${toDestroy.length} sandbox${toDestroy.length === 1 ? "" : "es"}`}
                </button>
              </form>
            ) : (
              <p className="mt-3 text-sm">Nothing selected can be destroyed.</p>
            )}
          </div>
        ) : null}
        {reclaim.isError ? (
          <div className="mt-3">
            <ErrorNotice title="The reclaim failed." error={reclaim.error} />
          </div>
        ) : null}
        {result ? (
          <div className="mt-4 rounded border border-zinc-300 p-4 dark:border-zinc-700" data-testid="reclaim-result">
            <h3 className="font-semibold">Reclaim result</h3>
            <ResultsTable results={result.results} label="What happened to each sandbox" />
          </div>
        ) : null}
      </Section>
    </>
  );
}

/**
 * An unrecorded sandbox (no record of this instance names it) is never in a batch: it is
 * destroyed one at a time, after its exact name is typed (audited as `unrecorded`).
 */
function DestroyUnrecorded({ orphan }: { orphan: Orphan }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [typed, setTyped] = useState("");
  const destroy = useMutation(
    trpc.orphans.destroyUnrecorded.mutationOptions({
      onSuccess: (done) => toast.success(`${done.name}: ${done.outcome.replace("_", " ")}.`),
      onError: (err) => toast.error(`Destroy refused: ${err.message}`),
      onSettled: () => queryClient.invalidateQueries(trpc.orphans.pathFilter()),
    }),
  );
  const id = `destroy-${orphan.id}`;
  return (
    <form
      className="mt-2 flex flex-wrap items-end gap-2"
      onSubmit={(e) => {
        e.preventDefault();
        if (typed.trim() !== orphan.name || destroy.isPending) return;
        destroy.mutate({ sandboxId: orphan.id, confirmName: typed.trim() });
      }}
    >
      <label htmlFor={id} className="text-xs">
        Type its name to destroy it
      </label>
      <input id={id} className={`${inputClass} w-56 font-mono text-xs`} autoComplete="off" value={typed} onChange={(e) => setTyped(e.target.value)} />
      <button type="submit" className={buttonClass.danger} disabled={typed.trim() !== orphan.name || destroy.isPending}>
        {destroy.isPending ? "Destroying…" : "Destroy this one"}
      </button>
    </form>
  );
}

function ResultsTable({ results, label }: { results: Reclaim["results"]; label: string }) {
  return (
    <div className="mt-2">
      <TableWrap label={label}>
        <table className={tableClass}>
          <thead className="bg-zinc-50 dark:bg-zinc-900">
            <tr>
              {["Sandbox", "Outcome", "Why", "Per hour"].map((h) => (
                <th key={h} scope="col" className={thClass}>
                  {h}
                </th>
              ))}
            </tr>
          </thead>
          <tbody className="divide-y divide-zinc-100 dark:divide-zinc-800">
            {results.map((r) => (
              <tr key={r.sandboxId} data-result-for={r.sandboxId} data-outcome={r.outcome}>
                <td className={`${tdClass} font-mono text-xs`}>
                  <div>{r.name ?? "—"}</div>
                  <div className="text-zinc-700 dark:text-zinc-300">{shortId(r.sandboxId)}</div>
                </td>
                <td className={tdClass}>
                  <Badge tone={OUTCOME_TONE[r.outcome]}>{r.outcome.replace("_", " ")}</Badge>
                </td>
                <td className={`${tdClass} max-w-lg text-xs`}>{r.reason}</td>
                <td className={`${tdClass} text-xs`}>{r.hourlyCost === null ? "—" : formatUsd(r.hourlyCost)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </TableWrap>
    </div>
  );
}
