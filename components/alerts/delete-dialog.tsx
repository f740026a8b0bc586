"use client";

import { AlertDialog } from "radix-ui";
import { buttonClass } from "../ui";

/** The delete confirmation; its own module, loaded on the first click (radix stays out of the page's initial JavaScript). */
export function DeleteEndpointDialog({
  open,
  onOpenChange,
  name,
  destination,
  pending,
  onConfirm,
}: {
  open: boolean;
  onOpenChange: (open: boolean) => void;
  name: string;
  /** The URL redacted (its host and a fingerprint). */
  destination: string;
  pending: boolean;
  onConfirm: () => void;
}) {
  return (
    <AlertDialog.Root open={open} onOpenChange={onOpenChange}>
      <AlertDialog.Portal>
        <AlertDialog.Overlay className="fixed inset-0 z-40 bg-black/40" />
        <AlertDialog.Content className="fixed top-1/2 left-1/2 z-50 w-[min(32rem,calc(100vw-2rem))] -translate-x-1/2 -translate-y-1/2 rounded-lg bg-white p-6 shadow-xl dark:bg-zinc-900">
          <AlertDialog.Title className="text-lg font-semibold">Delete the endpoint {name}?</AlertDialog.Title>
          <AlertDialog.Description className="mt-2 text-sm text-zinc-700 dark:text-zinc-300">
            No more alerts go to <span className="font-mono break-all">{destination}</span>, and its delivery log is deleted with it, pending deliveries included. An endpoint set by
            RUNWARDEN_ALERT_WEBHOOK_URL comes back at the next controller start unless the variable is removed.
          </AlertDialog.Description>
          <div className="mt-6 flex justify-end gap-3">
            <AlertDialog.Cancel asChild>
              <button type="button" className={buttonClass.secondary} disabled={pending}>
                Cancel
              </button>
            </AlertDialog.Cancel>
            <button type="button" className={buttonClass.danger} onClick={onConfirm} disabled={pending} data-testid="confirm-delete-endpoint">
              {pending ? "Deleting…" : "Delete endpoint"}
            </button>
          </div>
        </AlertDialog.Content>
      </AlertDialog.Portal>
    </AlertDialog.Root>
  );
}
