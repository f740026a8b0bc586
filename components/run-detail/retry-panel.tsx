"use client";

import { useMutation, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import dynamic from "next/dynamic";
import { useRef, useState } from "react";
import { toast } from "../toast";
import { useTRPC } from "@/trpc/react";
import { usePermission } from "../auth/access";
import { buttonClass, ErrorNotice, linkClass } from "../ui";
import type { Detail } from "./detail";

// The confirmation loads on the first click (or as the pointer or focus reaches the button).
const loadRetryDialog = () => import("./retry-dialog");
const RetryDialog = dynamic(() => loadRetryDialog().then((m) => m.RetryDialog), { ssr: false });
const prefetchRetryDialog = () => void loadRetryDialog();

/**
 * Retry (docs/rules.md §2.7). The server makes exactly one successor however often it is
 * asked; the button also refuses a second click while the first is in flight.
 */
export function RetryPanel({ detail }: { detail: Detail }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const can = usePermission("runs.retry", "Retry");
  const [open, setOpen] = useState(false);
  // Mounted from the first click on, so that closing it is radix's own (focus goes back to Retry).
  const [shown, setShown] = useState(false);
  const trigger = useRef<HTMLButtonElement>(null);
  // Set synchronously on the first click: a double click lands before React re-renders.
  const inFlight = useRef(false);
  const retry = useMutation(
    trpc.runs.retry.mutationOptions({
      onSuccess: (result) => {
        toast.success(result.created ? `Retry started run ${result.run.id.slice(0, 8)}.` : `Already retried: run ${result.run.id.slice(0, 8)}.`);
        setOpen(false);
      },
      onError: (err) => {
        toast.error(`Retry failed: ${err.message}`);
        setOpen(false);
      },
      onSettled: () => queryClient.invalidateQueries(trpc.runs.pathFilter()),
    }),
  );

  const successorId = detail.retry.successorId ?? retry.data?.run.id ?? null;
  if (successorId) {
    return (
      <p className="text-sm" data-testid="retry-successor">
        Retried: the new run is{" "}
        <Link href={`/runs/${successorId}`} className={`${linkClass} font-mono`}>
          {successorId}
        </Link>
        .
      </p>
    );
  }

  const blocker = detail.retry.blocker;
  if (blocker) {
    return (
      <div className="flex flex-wrap items-center gap-3">
        <button type="button" disabled className={buttonClass.primary} aria-describedby="retry-blocker">
          Retry
        </button>
        <p id="retry-blocker" className="text-sm text-zinc-700 dark:text-zinc-300">
          {blocker}
        </p>
      </div>
    );
  }

  // The server refuses it for this role; the button says so instead of inviting a refusal.
  if (!can.allowed) {
    return (
      <div className="flex flex-wrap items-center gap-3">
        <button type="button" disabled className={buttonClass.primary} aria-describedby="retry-refusal">
          Retry
        </button>
        <p id="retry-refusal" className="text-sm text-zinc-700 dark:text-zinc-300" data-testid="retry-refusal">
          {can.reason}
        </p>
      </div>
    );
  }

  const submit = () => {
    if (inFlight.current) return;
    inFlight.current = true;
    retry.mutate({ runId: detail.run.id }, { onSettled: () => (inFlight.current = false) });
  };

  return (
    <div className="flex flex-col gap-2">
      <button
        ref={trigger}
        type="button"
        className={`${buttonClass.primary} self-start`}
        disabled={retry.isPending}
        aria-haspopup="dialog"
        aria-expanded={open}
        onPointerEnter={prefetchRetryDialog}
        onFocus={prefetchRetryDialog}
        onClick={() => {
          setShown(true);
          setOpen(true);
        }}
      >
        {retry.isPending ? "Retrying…" : "Retry"}
      </button>
      {shown ? <RetryDialog open={open} onOpenChange={(next) => !retry.isPending && setOpen(next)} taskId={detail.run.taskId} pending={retry.isPending} onConfirm={submit} trigger={trigger} /> : null}
      {retry.isError ? <ErrorNotice title="Retry was not started." error={retry.error} /> : null}
    </div>
  );
}
