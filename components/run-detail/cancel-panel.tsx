"use client";

import { useMutation, useQueryClient } from "@tanstack/react-query";
import dynamic from "next/dynamic";
import { useRef, useState } from "react";
import { toast } from "../toast";
import { useTRPC } from "@/trpc/react";
import { usePermission } from "../auth/access";
import { buttonClass, ErrorNotice } from "../ui";
import type { Detail } from "./detail";

// The confirmation loads on the first click (or as the pointer or focus reaches the button).
const loadCancelDialog = () => import("./cancel-dialog");
const CancelDialog = dynamic(() => loadCancelDialog().then((m) => m.CancelDialog), { ssr: false });
const prefetchCancelDialog = () => void loadCancelDialog();

/**
 * Cancel (docs/rules.md §2.11), offered while the run has not ended (the engine's admitCancel,
 * `detail.cancel.blocker`); nothing at all on an ended run. The server makes one cancellation
 * however often it is asked: a second answers "already cancelled", shown as a toast.
 */
export function CancelPanel({ detail }: { detail: Detail }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const can = usePermission("runs.cancel", "Cancel");
  const [open, setOpen] = useState(false);
  const [shown, setShown] = useState(false);
  const trigger = useRef<HTMLButtonElement>(null);
  // Set synchronously on the first click: a double click lands before React re-renders.
  const inFlight = useRef(false);
  const cancel = useMutation(
    trpc.runs.cancel.mutationOptions({
      onSuccess: (outcome) => {
        if (outcome.result === "refused") toast.info(outcome.refusal);
        else {
          const left = outcome.leases.filter((l) => l.outcome !== "destroyed" && l.outcome !== "already_gone").length;
          toast.success(`Run ${outcome.runId.slice(0, 8)} cancelled${left ? `; ${left} sandbox${left > 1 ? "es are" : " is"} left to the cleanup sweep` : ""}.`);
        }
        setOpen(false);
      },
      onError: (err) => {
        toast.error(`Cancel failed: ${err.message}`);
        setOpen(false);
      },
      onSettled: () => queryClient.invalidateQueries(trpc.runs.pathFilter()),
    }),
  );

  if (detail.cancel.blocker !== null) return null;

  // The server refuses it for this role; the button says so instead of inviting a refusal.
  if (!can.allowed) {
    return (
      <div className="flex flex-wrap items-center gap-3">
        <button type="button" disabled className={buttonClass.secondary} aria-describedby="cancel-refusal">
          Cancel run
        </button>
        <p id="cancel-refusal" className="text-sm text-zinc-700 dark:text-zinc-300" data-testid="cancel-refusal">
          {can.reason}
        </p>
      </div>
    );
  }

  const submit = (reason: string) => {
    if (inFlight.current) return;
    inFlight.current = true;
    const trimmed = reason.trim();
    cancel.mutate({ runId: detail.run.id, ...(trimmed ? { reason: trimmed } : {}) }, { onSettled: () => (inFlight.current = false) });
  };

  return (
    <div className="flex flex-col gap-2">
      <button
        ref={trigger}
        type="button"
        className={`${buttonClass.secondary} self-start`}
        disabled={cancel.isPending}
        aria-haspopup="dialog"
        aria-expanded={open}
        onPointerEnter={prefetchCancelDialog}
        onFocus={prefetchCancelDialog}
        onClick={() => {
          setShown(true);
          setOpen(true);
        }}
      >
        {cancel.isPending ? "Cancelling…" : "Cancel run"}
      </button>
      {shown ? (
        <CancelDialog open={open} onOpenChange={(next) => !cancel.isPending && setOpen(next)} status={detail.run.status} pending={cancel.isPending} onConfirm={submit} trigger={trigger} />
      ) : null}
      {cancel.isError ? <ErrorNotice title="The run was not cancelled." error={cancel.error} /> : null}
    </div>
  );
}
