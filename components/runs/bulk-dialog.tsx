"use client";

import { useMutation, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { AlertDialog } from "radix-ui";
import { useEffect, useRef, useState, type RefObject } from "react";
import { useTRPC } from "@/trpc/react";
import type { RouterOutputs } from "@/trpc/types";
import type { BulkPlanKind } from "@/server/shared/bulk";
import { assertNever } from "@/server/shared/engine";
import { Badge, buttonClass, ErrorNotice, inputClass, linkClass, Loading, shortId, tableClass, tdClass, thClass } from "../ui";
import type { BulkFilter } from "./bulk-action";

type Plan = RouterOutputs["plans"]["preview"];
type Item = Plan["items"][number];

const VERB: Record<BulkPlanKind, { do: string; doing: string; done: string }> = {
  retry: { do: "Retry", doing: "Retrying…", done: "retried" },
  cancel: { do: "Cancel", doing: "Cancelling…", done: "cancelled" },
};

/**
 * Bulk Retry or Cancel (docs/rules.md §2.11): the preview (each run admitted or refused, with the
 * reason), the typed word, then each run's result. Its own module, loaded on the first click
 * (bulk-action.tsx), so radix's dialog stays out of the runs page's initial JavaScript.
 */
export function BulkDialog({
  open,
  onOpenChange,
  kind,
  filter,
  title,
  trigger,
}: {
  open: boolean;
  onOpenChange: (open: boolean) => void;
  kind: BulkPlanKind;
  filter: BulkFilter;
  title: string;
  trigger: RefObject<HTMLButtonElement | null>;
}) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const preview = useMutation(trpc.plans.preview.mutationOptions());
  const confirm = useMutation(trpc.plans.confirm.mutationOptions({ onSettled: () => queryClient.invalidateQueries(trpc.runs.pathFilter()) }));
  const [typed, setTyped] = useState("");
  const [reason, setReason] = useState("");
  // Set synchronously on the first click: a double click lands before React re-renders (the server holds either way).
  const inFlight = useRef(false);
  const asked = useRef(false);
  const ask = () => {
    if (asked.current) return;
    asked.current = true;
    preview.mutate({ kind, filter, ...(reason.trim() ? { reason: reason.trim() } : {}) });
  };
  // A Retry previews at once; a Cancel first asks why (kept on each cancelled run).
  useEffect(() => {
    if (kind === "retry") ask();
  });

  const plan: Plan | undefined = confirm.data ?? preview.data;
  const verb = VERB[kind];
  const ready = Boolean(preview.data && preview.data.admitted > 0 && !confirm.data);
  const matches = preview.data ? typed.trim() === preview.data.confirmWord : false;

  return (
    <AlertDialog.Root open={open} onOpenChange={(next) => !confirm.isPending && onOpenChange(next)}>
      <AlertDialog.Portal>
        <AlertDialog.Overlay className="fixed inset-0 z-40 bg-black/40" />
        <AlertDialog.Content
          data-testid="bulk-dialog"
          className="fixed top-1/2 left-1/2 z-50 flex max-h-[calc(100vh-2rem)] w-[min(56rem,calc(100vw-2rem))] -translate-x-1/2 -translate-y-1/2 flex-col rounded-lg bg-white p-6 shadow-xl dark:bg-zinc-900"
          onCloseAutoFocus={(e) => {
            e.preventDefault();
            trigger.current?.focus();
          }}
        >
          <AlertDialog.Title className="text-lg font-semibold">{title}</AlertDialog.Title>
          <AlertDialog.Description className="mt-2 text-sm text-zinc-700 dark:text-zinc-300">
            {kind === "retry"
              ? "Each run is judged as a single Retry would judge it. Nothing changes until you confirm; then only the admitted runs are retried, each exactly once, and each is judged again at that moment."
              : "Each run is judged as a single Cancel would judge it. Nothing changes until you confirm; then only the admitted runs are cancelled, each judged again at that moment."}
          </AlertDialog.Description>

          <div className="mt-4 min-h-0 flex-1 overflow-y-auto">
            {preview.isIdle && kind === "cancel" ? (
              <form
                className="flex flex-wrap items-end gap-2"
                onSubmit={(e) => {
                  e.preventDefault();
                  ask();
                }}
              >
                <label htmlFor="bulk-cancel-reason" className="text-sm">
                  Why (optional, kept on each run)
                </label>
                <input id="bulk-cancel-reason" className={`${inputClass} w-72`} maxLength={500} value={reason} onChange={(e) => setReason(e.target.value)} />
                <button type="submit" className={buttonClass.secondary} data-testid="bulk-preview">
                  Preview
                </button>
              </form>
            ) : null}
            {preview.isPending ? <Loading label="Judging each run…" /> : null}
            {preview.isError ? <ErrorNotice title="No plan was made." error={preview.error} /> : null}
            {plan ? <PlanSummary plan={plan} verb={verb} /> : null}
            {plan ? <ItemsTable plan={plan} /> : null}
          </div>

          {confirm.isError ? <ErrorNotice title={`Not ${verb.done}.`} error={confirm.error} /> : null}
          <div className="mt-4 flex flex-wrap items-end justify-end gap-3">
            {ready && preview.data ? (
              <form
                className="mr-auto flex flex-wrap items-end gap-2"
                onSubmit={(e) => {
                  e.preventDefault();
                  if (!matches || inFlight.current) return;
                  inFlight.current = true;
                  confirm.mutate({ planId: preview.data!.id, confirm: typed.trim() }, { onSettled: () => (inFlight.current = false) });
                }}
              >
                <label htmlFor="bulk-confirm-word" className="text-sm">
                  Type <span className="font-mono font-semibold">{preview.data.confirmWord}</span> to confirm
                </label>
                <input
                  id="bulk-confirm-word"
                  data-testid="bulk-confirm-input"
                  className={`${inputClass} w-40 font-mono`}
                  autoComplete="off"
                  value={typed}
                  onChange={(e) => setTyped(e.target.value)}
                />
                <button type="submit" className={kind === "cancel" ? buttonClass.danger : buttonClass.primary} disabled={!matches || confirm.isPending} data-testid="bulk-confirm">
                  {confirm.isPending ? verb.doing : `${verb.do} ${preview.data.admitted} run${preview.data.admitted === 1 ? "" : "s"}`}
                </button>
              </form>
            ) : null}
            <AlertDialog.Cancel asChild>
              <button type="button" className={buttonClass.secondary} disabled={confirm.isPending}>
                Close
              </button>
            </AlertDialog.Cancel>
          </div>
        </AlertDialog.Content>
      </AlertDialog.Portal>
    </AlertDialog.Root>
  );
}

function PlanSummary({ plan, verb }: { plan: Plan; verb: (typeof VERB)[BulkPlanKind] }) {
  const c = plan.counts;
  const refused = plan.total - plan.admitted;
  if (!plan.confirmedAt) {
    return (
      <p className="text-sm" data-testid="bulk-preview-counts" aria-live="polite">
        {plan.total} run{plan.total === 1 ? "" : "s"}: <strong>{plan.admitted} admitted</strong>, {refused} refused. This preview is good until{" "}
        {plan.expiresAt.toLocaleTimeString("en", { hour: "2-digit", minute: "2-digit" })}. Plan <span className="font-mono">{shortId(plan.id)}</span>.
      </p>
    );
  }
  const done = plan.kind === "retry" ? c.retried : c.cancelled;
  return (
    <p className="text-sm" data-testid="bulk-results" aria-live="polite">
      <strong>
        {done} {verb.done}
      </strong>
      {c.refused ? `, ${c.refused} refused now` : ""}
      {c.failed ? `, ${c.failed} failed` : ""}
      {c.pending ? `, ${c.pending} still pending` : ""}; {c.refusedAtPreview} refused at the preview, left as they were.
    </p>
  );
}

function ItemsTable({ plan }: { plan: Plan }) {
  const confirmed = Boolean(plan.confirmedAt);
  return (
    <table className={`${tableClass} mt-3`} aria-label="Runs in this plan">
      <thead>
        <tr>
          <th className={thClass}>Run</th>
          <th className={thClass}>Company</th>
          <th className={thClass}>Task</th>
          <th className={thClass}>Preview</th>
          {confirmed ? <th className={thClass}>Result</th> : null}
        </tr>
      </thead>
      <tbody className="divide-y divide-zinc-100 dark:divide-zinc-800">
        {plan.items.map((i) => (
          <tr key={i.runId} data-testid="bulk-item" data-admitted={i.admitted} data-result={i.result ?? ""}>
            <td className={`${tdClass} font-mono`}>
              <Link href={`/runs/${i.runId}`} className={linkClass}>
                {shortId(i.runId)}
              </Link>
            </td>
            <td className={tdClass}>{i.companyId}</td>
            <td className={`${tdClass} break-all`}>{i.taskId}</td>
            <td className={tdClass}>
              {i.admitted ? (
                <Badge tone="info">admitted</Badge>
              ) : (
                <>
                  <Badge tone="warn">refused</Badge> <span className="text-zinc-700 dark:text-zinc-300">{i.refusal}</span>
                </>
              )}
            </td>
            {confirmed ? (
              <td className={tdClass}>
                <ItemResult item={i} />
              </td>
            ) : null}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function ItemResult({ item }: { item: Item }) {
  if (!item.admitted) return <span className="text-zinc-700 dark:text-zinc-300">not in the plan</span>;
  switch (item.result) {
    case null:
      return <Badge>pending</Badge>;
    case "retried":
      return (
        <>
          <Badge tone="good">retried</Badge>{" "}
          {item.successorId ? (
            <Link href={`/runs/${item.successorId}`} className={`${linkClass} font-mono`}>
              {shortId(item.successorId)}
            </Link>
          ) : null}
        </>
      );
    case "cancelled":
      // The sandbox goes after the run was cancelled and recorded (docs/rules.md §2.11): pending, done or failed.
      return (
        <>
          <Badge tone="good">cancelled</Badge>
          {item.teardown ? <span className="text-zinc-700 dark:text-zinc-300"> sandbox teardown: {item.teardown}</span> : null}
        </>
      );
    case "refused":
    case "failed":
      return (
        <>
          <Badge tone={item.result === "failed" ? "bad" : "warn"}>{item.result}</Badge> <span className="text-zinc-700 dark:text-zinc-300">{item.resultDetail}</span>
        </>
      );
    default:
      return assertNever(item.result);
  }
}
