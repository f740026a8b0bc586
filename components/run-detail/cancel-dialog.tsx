"use client";

import { AlertDialog } from "radix-ui";
import { useState, type RefObject } from "react";
import { CANCEL_REASON_MAX } from "@/server/shared/limits";
import { buttonClass } from "../ui";

/**
 * The Cancel confirmation, with an optional reason. Its own module, loaded on the first click
 * (cancel-panel.tsx) like the Retry one: radix's dialog stays out of the page's initial JavaScript.
 */
export function CancelDialog({
  open,
  onOpenChange,
  status,
  pending,
  onConfirm,
  trigger,
}: {
  open: boolean;
  onOpenChange: (open: boolean) => void;
  status: string;
  pending: boolean;
  onConfirm: (reason: string) => void;
  /** The Cancel button, focused again when the dialog closes (it is not radix's Trigger). */
  trigger: RefObject<HTMLButtonElement | null>;
}) {
  const [reason, setReason] = useState("");
  return (
    <AlertDialog.Root open={open} onOpenChange={onOpenChange}>
      <AlertDialog.Portal>
        <AlertDialog.Overlay className="fixed inset-0 z-40 bg-black/40" />
        <AlertDialog.Content
          className="fixed top-1/2 left-1/2 z-50 w-[min(32rem,calc(100vw-2rem))] -translate-x-1/2 -translate-y-1/2 rounded-lg bg-white p-6 shadow-xl dark:bg-zinc-900"
          onCloseAutoFocus={(e) => {
            e.preventDefault();
            trigger.current?.focus();
          }}
        >
          <AlertDialog.Title className="text-lg font-semibold">Cancel this run?</AlertDialog.Title>
          <AlertDialog.Description className="mt-2 text-sm text-zinc-700 dark:text-zinc-300">
            The run is {status}. Cancel stops its agent where it stands and destroys its sandbox; the work of a turn in progress is lost. The run can be retried afterwards.
          </AlertDialog.Description>
          <label className="mt-4 block text-sm font-medium" htmlFor="cancel-reason">
            Reason <span className="font-normal text-zinc-700 dark:text-zinc-300">(optional, shown on the run)</span>
          </label>
          <textarea
            id="cancel-reason"
            className="mt-1 w-full rounded border border-zinc-300 bg-white p-2 text-sm dark:border-zinc-600 dark:bg-zinc-950"
            rows={2}
            maxLength={CANCEL_REASON_MAX}
            value={reason}
            onChange={(e) => setReason(e.target.value)}
            disabled={pending}
          />
          <div className="mt-6 flex justify-end gap-3">
            <AlertDialog.Cancel asChild>
              <button type="button" className={buttonClass.secondary} disabled={pending}>
                Keep running
              </button>
            </AlertDialog.Cancel>
            <button type="button" className={buttonClass.danger} onClick={() => onConfirm(reason)} disabled={pending} data-testid="confirm-cancel">
              {pending ? "Cancelling…" : "Cancel run"}
            </button>
          </div>
        </AlertDialog.Content>
      </AlertDialog.Portal>
    </AlertDialog.Root>
  );
}
