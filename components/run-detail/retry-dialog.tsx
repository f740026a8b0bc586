"use client";

import { AlertDialog } from "radix-ui";
import type { RefObject } from "react";
import { buttonClass } from "../ui";

/**
 * The Retry confirmation. Its own module, loaded on the first click (retry-panel.tsx): radix's
 * dialog stays out of the run page's initial JavaScript (docs/decisions/0003-cost-at-scale.md).
 */
export function RetryDialog({
  open,
  onOpenChange,
  taskId,
  pending,
  onConfirm,
  trigger,
}: {
  open: boolean;
  onOpenChange: (open: boolean) => void;
  taskId: string;
  pending: boolean;
  onConfirm: () => void;
  /** The Retry button, focused again when the dialog closes (it is not radix's Trigger). */
  trigger: RefObject<HTMLButtonElement | null>;
}) {
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
          <AlertDialog.Title className="text-lg font-semibold">Retry this run?</AlertDialog.Title>
          <AlertDialog.Description className="mt-2 text-sm text-zinc-700 dark:text-zinc-300">
            This starts exactly one new run of task <span className="font-mono">{taskId}</span> with a fresh provider session. The old run&apos;s sandboxes are cleaned up.
          </AlertDialog.Description>
          <div className="mt-6 flex justify-end gap-3">
            <AlertDialog.Cancel asChild>
              <button type="button" className={buttonClass.secondary} disabled={pending}>
                Cancel
              </button>
            </AlertDialog.Cancel>
            <button type="button" className={buttonClass.primary} onClick={onConfirm} disabled={pending} data-testid="confirm-retry">
              {pending ? "Retrying…" : "Retry now"}
            </button>
          </div>
        </AlertDialog.Content>
      </AlertDialog.Portal>
    </AlertDialog.Root>
  );
}
