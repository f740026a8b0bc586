"use client";

import { useMutation, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { AlertDialog } from "radix-ui";
import { useRef, useState } from "react";
import { toast } from "../toast";
import { useTRPC } from "@/trpc/react";
import { usePermission } from "../auth/access";
import { buttonClass, ErrorNotice, linkClass } from "../ui";
import type { Detail } from "./detail";

/**
 * Retry (DOMAIN.md §2.7). The server makes exactly one successor however often it is
 * asked; the button also refuses a second click while the first is in flight.
 */
export function RetryPanel({ detail }: { detail: Detail }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const can = usePermission("runs.retry", "Retry");
  const [open, setOpen] = useState(false);
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
      <AlertDialog.Root open={open} onOpenChange={(next) => !retry.isPending && setOpen(next)}>
        <AlertDialog.Trigger asChild>
          <button type="button" className={`${buttonClass.primary} self-start`} disabled={retry.isPending}>
            {retry.isPending ? "Retrying…" : "Retry"}
          </button>
        </AlertDialog.Trigger>
        <AlertDialog.Portal>
          <AlertDialog.Overlay className="fixed inset-0 z-40 bg-black/40" />
          <AlertDialog.Content className="fixed top-1/2 left-1/2 z-50 w-[min(32rem,calc(100vw-2rem))] -translate-x-1/2 -translate-y-1/2 rounded-lg bg-white p-6 shadow-xl dark:bg-zinc-900">
            <AlertDialog.Title className="text-lg font-semibold">Retry this run?</AlertDialog.Title>
            <AlertDialog.Description className="mt-2 text-sm text-zinc-700 dark:text-zinc-300">
              This starts exactly one new run of task <span className="font-mono">{detail.run.taskId}</span> with a fresh provider session. The old run&apos;s sandboxes are cleaned up.
            </AlertDialog.Description>
            <div className="mt-6 flex justify-end gap-3">
              <AlertDialog.Cancel asChild>
                <button type="button" className={buttonClass.secondary} disabled={retry.isPending}>
                  Cancel
                </button>
              </AlertDialog.Cancel>
              <button type="button" className={buttonClass.primary} onClick={submit} disabled={retry.isPending} data-testid="confirm-retry">
                {retry.isPending ? "Retrying…" : "Retry now"}
              </button>
            </div>
          </AlertDialog.Content>
        </AlertDialog.Portal>
      </AlertDialog.Root>
      {retry.isError ? <ErrorNotice title="Retry was not started." error={retry.error} /> : null}
    </div>
  );
}
