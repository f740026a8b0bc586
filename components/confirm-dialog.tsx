"use client";

import { AlertDialog } from "radix-ui";
import { useState, type ReactNode } from "react";
import { buttonClass } from "./ui";

/**
 * A secondary button that asks before it acts: a dialog with the question, what it will do,
 * Cancel and the confirming (danger) button. The People page's disable and reset, the API
 * tokens page's Revoke.
 */
export function ConfirmDialog({ trigger, title, confirm, disabled, onConfirm, children }: { trigger: string; title: string; confirm: string; disabled: boolean; onConfirm: () => void; children: ReactNode }) {
  const [open, setOpen] = useState(false);
  return (
    <AlertDialog.Root open={open} onOpenChange={setOpen}>
      <AlertDialog.Trigger asChild>
        <button type="button" className={buttonClass.secondary} disabled={disabled}>
          {trigger}
        </button>
      </AlertDialog.Trigger>
      <AlertDialog.Portal>
        <AlertDialog.Overlay className="fixed inset-0 z-40 bg-black/40" />
        <AlertDialog.Content className="fixed top-1/2 left-1/2 z-50 w-[min(32rem,calc(100vw-2rem))] -translate-x-1/2 -translate-y-1/2 rounded-lg bg-white p-6 shadow-xl dark:bg-zinc-900">
          <AlertDialog.Title className="text-lg font-semibold break-all">{title}</AlertDialog.Title>
          <AlertDialog.Description className="mt-2 text-sm text-zinc-700 dark:text-zinc-300">{children}</AlertDialog.Description>
          <div className="mt-6 flex justify-end gap-3">
            <AlertDialog.Cancel asChild>
              <button type="button" className={buttonClass.secondary}>
                Cancel
              </button>
            </AlertDialog.Cancel>
            <AlertDialog.Action asChild>
              <button type="button" className={buttonClass.danger} onClick={onConfirm}>
                {confirm}
              </button>
            </AlertDialog.Action>
          </div>
        </AlertDialog.Content>
      </AlertDialog.Portal>
    </AlertDialog.Root>
  );
}
